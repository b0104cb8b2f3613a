package syntax

/*
#include <stdbool.h>
#include <stdint.h>
*/
import "C"

import (
	"context"
	"runtime/cgo"
)

// syntaxContextDone answers syntax.c's progress callback: whether the
// context behind the handle is done.
//
//export syntaxContextDone
func syntaxContextDone(h C.uintptr_t) C.bool {
	ctx := cgo.Handle(h).Value().(context.Context)
	return ctx.Err() != nil
}
