//go:build wasip1

package sdk

import (
	"fmt"
	"os"
	"unsafe"
)

// mainMain is the program's main function; a reactor build never runs it,
// so the SDK does to let it call Handle.
//
//go:linkname mainMain main.main
func mainMain()

var (
	inBuf  []byte // the batch buffer handed out by sluice_alloc
	outBuf []byte // the last output, kept alive for the host to read
)

// alloc returns a buffer of n bytes for the host to write a batch into.
//
//go:wasmexport sluice_alloc
func alloc(n uint32) uint32 {
	if uint32(cap(inBuf)) < n {
		inBuf = make([]byte, n)
	}
	inBuf = inBuf[:n]
	if n == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(inBuf))))
}

// handle runs the handler on the batch at [ptr, ptr+n) and returns the
// output's location as ptr<<32 | len.
//
//go:wasmexport sluice_handle
func handle(ptr, n uint32) uint64 {
	if handler == nil {
		reactor = true
		mainMain()
	}
	if n > uint32(len(inBuf)) || n > 0 && ptr != uint32(uintptr(unsafe.Pointer(unsafe.SliceData(inBuf)))) {
		fmt.Fprintf(os.Stderr, "sluice sdk: sluice_handle(%d, %d) does not name the buffer from sluice_alloc\n", ptr, n)
		os.Exit(1)
	}
	out, err := run(inBuf[:n])
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice sdk: %v\n", err)
		os.Exit(1)
	}
	outBuf = out
	if len(out) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}
