module github.com/toolnexus/toolnexus-rs/bindings/go

go 1.24
