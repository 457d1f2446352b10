//go:build wasip1

package sdk

import (
	"runtime"
	"unsafe"
)

// The host functions of module "sluice" (Function ABI v1.1, see
// docs/function-abi.md). Pointers are offsets in linear memory.

//go:wasmimport sluice result_read
func sluiceResultRead(ptr, n uint32) int32

//go:wasmimport sluice http_request
func sluiceHTTPRequest(reqPtr, reqLen, respLenPtr uint32) uint32

//go:wasmimport sluice kv_open
func sluiceKVOpen(namePtr, nameLen, handlePtr uint32) uint32

//go:wasmimport sluice kv_get
func sluiceKVGet(store, keyPtr, keyLen, valLenPtr uint32) uint32

//go:wasmimport sluice kv_set
func sluiceKVSet(store, keyPtr, keyLen, valPtr, valLen uint32, ttlMS int64) uint32

//go:wasmimport sluice kv_delete
func sluiceKVDelete(store, keyPtr, keyLen uint32) uint32

//go:wasmimport sluice kv_increment
func sluiceKVIncrement(store, keyPtr, keyLen uint32, delta int64, valuePtr uint32) uint32

//go:wasmimport sluice kv_compare_and_set
func sluiceKVCompareAndSet(store, keyPtr, keyLen, oldPtr, oldLen, newPtr, newLen, flags uint32, ttlMS int64) uint32

// ptr returns the linear-memory offset of b's data (0 when empty).
func ptr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// out receives the host's out-parameters. It is a package variable, not a
// local, so it never moves with a goroutine stack; WebAssembly runs one
// goroutine at a time and no host call yields.
var out struct {
	n uint32
	_ uint32
	v int64
}

func outN() uint32 { out.n = 0; return uint32(uintptr(unsafe.Pointer(&out.n))) }

func outV() uint32 { out.v = 0; return uint32(uintptr(unsafe.Pointer(&out.v))) }

// result reads the last call's result of n bytes.
func result(n uint32) []byte {
	if n == 0 {
		return nil
	}
	buf := make([]byte, n)
	sluiceResultRead(ptr(buf), n)
	return buf
}

func hostHTTP(doc []byte) (uint32, []byte) {
	errno := sluiceHTTPRequest(ptr(doc), uint32(len(doc)), outN())
	runtime.KeepAlive(doc)
	return errno, result(out.n)
}

func hostKVOpen(name string) (uint32, uint32, []byte) {
	b := []byte(name)
	errno := sluiceKVOpen(ptr(b), uint32(len(b)), outN())
	runtime.KeepAlive(b)
	return errno, out.n, lastResult(errno)
}

// lastResult reads the message of a failed call.
func lastResult(errno uint32) []byte {
	if errno == 0 {
		return nil
	}
	n := sluiceResultRead(0, 0)
	if n <= 0 {
		return nil
	}
	return result(uint32(n))
}

func hostKVGet(h uint32, key []byte) (uint32, []byte) {
	errno := sluiceKVGet(h, ptr(key), uint32(len(key)), outN())
	runtime.KeepAlive(key)
	return errno, result(out.n)
}

func hostKVSet(h uint32, key, val []byte, ttlMS int64) (uint32, []byte) {
	errno := sluiceKVSet(h, ptr(key), uint32(len(key)), ptr(val), uint32(len(val)), ttlMS)
	runtime.KeepAlive(key)
	runtime.KeepAlive(val)
	return errno, lastResult(errno)
}

func hostKVDelete(h uint32, key []byte) (uint32, []byte) {
	errno := sluiceKVDelete(h, ptr(key), uint32(len(key)))
	runtime.KeepAlive(key)
	return errno, lastResult(errno)
}

func hostKVIncrement(h uint32, key []byte, delta int64) (uint32, int64, []byte) {
	errno := sluiceKVIncrement(h, ptr(key), uint32(len(key)), delta, outV())
	runtime.KeepAlive(key)
	return errno, out.v, lastResult(errno)
}

func hostKVCompareAndSet(h uint32, key, old, val []byte, absent bool, ttlMS int64) (uint32, []byte) {
	var flags uint32
	if absent {
		flags = 1
	}
	errno := sluiceKVCompareAndSet(h, ptr(key), uint32(len(key)), ptr(old), uint32(len(old)), ptr(val), uint32(len(val)), flags, ttlMS)
	runtime.KeepAlive(key)
	runtime.KeepAlive(old)
	runtime.KeepAlive(val)
	return errno, lastResult(errno)
}
