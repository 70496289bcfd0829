package toolnexus

/*
#include <stdlib.h>
#include "toolnexus.h"
*/
import "C"

import (
	"encoding/json"
	"unsafe"
)

// replyError fails a host callback with msg (tn_reply_set_error copies it).
func replyError(reply *C.tn_reply, msg string) {
	m := C.CString(msg)
	C.tn_reply_set_error(reply, m)
	C.free(unsafe.Pointer(m))
}

// replyJSON answers a host callback with answer as JSON; nil sets no
// answer. An answer that does not encode is returned, nothing set.
func replyJSON(reply *C.tn_reply, answer any) error {
	if answer == nil {
		return nil
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	b = append(b, 0)
	C.tn_reply_set_json(reply, (*C.char)(unsafe.Pointer(&b[0])))
	return nil
}
