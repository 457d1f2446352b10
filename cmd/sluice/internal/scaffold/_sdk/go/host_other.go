//go:build !wasip1

package sdk

// Outside WebAssembly there is no Sluice host: every host call fails.

var noHost = []byte("not running on the sluice host (build with GOOS=wasip1)")

const errnoNoHost = 4 // failed

func hostHTTP([]byte) (uint32, []byte) { return errnoNoHost, noHost }

func hostKVOpen(string) (uint32, uint32, []byte) { return errnoNoHost, 0, noHost }

func hostKVGet(uint32, []byte) (uint32, []byte) { return errnoNoHost, noHost }

func hostKVSet(uint32, []byte, []byte, int64) (uint32, []byte) { return errnoNoHost, noHost }

func hostKVDelete(uint32, []byte) (uint32, []byte) { return errnoNoHost, noHost }

func hostKVIncrement(uint32, []byte, int64) (uint32, int64, []byte) { return errnoNoHost, 0, noHost }

func hostKVCompareAndSet(uint32, []byte, []byte, []byte, bool, int64) (uint32, []byte) {
	return errnoNoHost, noHost
}
