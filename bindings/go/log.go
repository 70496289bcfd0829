package toolnexus

/*
#include <stdint.h>
void tngo_log_set(int32_t level, uintptr_t handle);
*/
import "C"

import "runtime/cgo"

// Log levels of SetLogger.
const (
	LogOff   = 0
	LogError = 1
	LogWarn  = 2
	LogInfo  = 3 // MCP servers' stderr lines come at this level
	LogDebug = 4
)

// Logger receives the library's diagnostics: a level, the subsystem
// ("mcp", "http", "translate", "skills", "client") and one line of text,
// never a header value, key or ${ENV} expansion. It may be called from any
// goroutine's OS thread, concurrently.
type Logger func(level int, target, message string)

// SetLogger sets the process-wide logger: messages at level and more severe
// ones go to fn. SetLogger(LogOff, nil) turns logging off (the default).
func SetLogger(level int, fn Logger) {
	if fn == nil || level <= LogOff {
		C.tngo_log_set(0, 0)
		return
	}
	h := cgo.NewHandle(fn)
	C.tngo_log_set(C.int32_t(level), C.uintptr_t(h))
}

//export goLog
func goLog(handle C.uintptr_t, level C.int32_t, target, message *C.char) {
	defer func() { _ = recover() }() // a logger's panic must not unwind into Rust
	if fn, ok := cgo.Handle(handle).Value().(Logger); ok {
		fn(int(level), C.GoString(target), C.GoString(message))
	}
}

//export goLogRelease
func goLogRelease(handle C.uintptr_t) {
	cgo.Handle(handle).Delete()
}
