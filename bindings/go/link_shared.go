//go:build !toolnexus_static

package toolnexus

// The default link: the shared library, through pkg-config's Cflags and Libs
// (-ltoolnexus resolves to libtoolnexus.so when both files are installed).
// Build with -tags toolnexus_static for the archive (link_static.go).

/*
#cgo pkg-config: toolnexus
*/
import "C"
