module example.com/toolnexus-install-check

go 1.24

require github.com/toolnexus/toolnexus-rs/bindings/go v0.0.0

// scripts/install_check.sh points this at the checkout's bindings/go (the
// module is not published yet); README, "Using it from Go", shows the same.
replace github.com/toolnexus/toolnexus-rs/bindings/go => ../../../bindings/go
