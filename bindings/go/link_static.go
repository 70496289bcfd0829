//go:build toolnexus_static

package toolnexus

// The static link (go build -tags toolnexus_static): the archive
// libtoolnexus.a by file name, then `pkg-config --static`'s answer for
// -L, Cflags and Libs.private (the system libraries the Rust standard
// library needs). cgo puts these LDFLAGS before pkg-config's, so the archive
// defines every tn_* symbol before pkg-config's own -ltoolnexus is reached;
// --as-needed keeps that shared library, which then supplies nothing, out of
// the program's DT_NEEDED. The program needs no libtoolnexus at run time.

/*
#cgo pkg-config: --static toolnexus
#cgo LDFLAGS: -l:libtoolnexus.a -Wl,--as-needed
*/
import "C"
