package wasmbuild

import "fmt"

// Handwritten returns a small hand-assembled module by name:
//
//	"recursion"       command whose _start runs a loop-free binary call
//	                  tree 60 calls deep (2^60 calls): no loop instruction
//	                  ever runs, so only call-site checks can stop it
//	"unknown-import"  command importing env.foo, which no host provides
//	"no-entry"        module exporting neither _start nor reactor exports
//	"trap"            command whose _start executes unreachable
//	"spin"            command importing wasi sched_yield (as Go modules
//	                  do) whose _start is an empty infinite loop
//	"baddata"         command exporting a 1 MiB memory whose data segment
//	                  lies at 2 MiB, past it: instantiation fails after
//	                  the memory is allocated
//	"growzero"        command exporting a memory of 0 pages whose _start
//	                  grows it by 100 pages (6.25 MiB) and traps if
//	                  refused
//	"multivalue"      command importing sched_yield whose _start calls
//	                  two() (i32, i32), which calls rec(i32) (i32, i64),
//	                  which calls itself without end: a loop-free
//	                  recursion through functions returning two values
//
// It panics on an unknown name (a programmer error).
func Handwritten(name string) []byte {
	header := wasmHeader
	switch name {
	case "recursion":
		return concat(header,
			section(1, 0x02, 0x60, 0x00, 0x00, 0x60, 0x01, 0x7f, 0x00), // types: ()->(), (i32)->()
			section(3, 0x02, 0x00, 0x01),                               // funcs: _start:t0, rec:t1
			section(5, 0x01, 0x00, 0x01),                               // one memory, min 1 page
			section(7, concat([]byte{0x02}, name6("_start"), []byte{0x00, 0x00}, name6("memory"), []byte{0x02, 0x00})...),
			section(10, concat([]byte{0x02},
				body(0x41, 0x3c, 0x10, 0x01), // i32.const 60; call rec
				body(
					0x20, 0x00, 0x45, 0x04, 0x40, 0x0f, 0x0b, // if n == 0 return
					0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x01, // rec(n-1)
					0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x01, // rec(n-1)
				))...),
		)
	case "unknown-import":
		return concat(header,
			section(1, 0x01, 0x60, 0x00, 0x00),
			section(2, concat([]byte{0x01}, name6("env"), name6("foo"), []byte{0x00, 0x00})...),
			section(7, concat([]byte{0x01}, name6("_start"), []byte{0x00, 0x00})...),
		)
	case "no-entry":
		return concat(header, section(5, 0x01, 0x00, 0x01))
	case "spin":
		return concat(header,
			section(1, 0x02, 0x60, 0x00, 0x01, 0x7f, 0x60, 0x00, 0x00), // types: ()->i32, ()->()
			section(2, concat([]byte{0x01}, name6("wasi_snapshot_preview1"), name6("sched_yield"), []byte{0x00, 0x00})...),
			section(3, 0x01, 0x01),
			section(5, 0x01, 0x00, 0x01),
			section(7, concat([]byte{0x02}, name6("_start"), []byte{0x00, 0x01}, name6("memory"), []byte{0x02, 0x00})...),
			section(10, concat([]byte{0x01}, body(0x03, 0x40, 0x0c, 0x00, 0x0b))...), // loop br 0 end
		)
	case "multivalue":
		return concat(header,
			section(1, 0x04, // types
				0x60, 0x00, 0x01, 0x7f, // ()->i32: sched_yield
				0x60, 0x00, 0x00, // ()->(): _start
				0x60, 0x00, 0x02, 0x7f, 0x7f, // ()->(i32, i32): two
				0x60, 0x01, 0x7f, 0x02, 0x7f, 0x7e), // (i32)->(i32, i64): rec
			section(2, concat([]byte{0x01}, name6("wasi_snapshot_preview1"), name6("sched_yield"), []byte{0x00, 0x00})...),
			section(3, 0x03, 0x01, 0x02, 0x03), // _start, two, rec
			section(5, 0x01, 0x00, 0x01),
			section(7, concat([]byte{0x02}, name6("_start"), []byte{0x00, 0x01}, name6("memory"), []byte{0x02, 0x00})...),
			section(10, concat([]byte{0x03},
				body(0x10, 0x02, 0x1a, 0x1a),                         // call two; drop; drop
				body(0x41, 0x00, 0x10, 0x03, 0x1a, 0x41, 0x01),       // rec(0); drop the i64; i32.const 1
				body(0x20, 0x00, 0x41, 0x01, 0x6a, 0x10, 0x03, 0x0f), // return rec(n+1)
			)...),
		)
	case "baddata":
		// One active segment: i32.const 0x200000, one byte.
		return memoryCommand(16, body(), section(11, 0x01, 0x00, 0x41, 0x80, 0x80, 0x80, 0x01, 0x0b, 0x01, 'x'))
	case "growzero":
		return memoryCommand(0, body(
			0x41, 0xe4, 0x00, 0x40, 0x00, // memory.grow(100)
			0x41, 0x7f, 0x46, // == -1
			0x04, 0x40, 0x00, 0x0b, // if: unreachable
		))
	case "trap":
		return concat(header,
			section(1, 0x01, 0x60, 0x00, 0x00),
			section(3, 0x01, 0x00),
			section(7, concat([]byte{0x01}, name6("_start"), []byte{0x00, 0x00})...),
			section(10, concat([]byte{0x01}, body(0x00))...), // unreachable
		)
	}
	panic(fmt.Sprintf("wasmbuild: no handwritten module %q", name))
}

// wasmHeader opens every module: the magic number and version 1.
var wasmHeader = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// memoryCommand is a command exporting _start, whose body is code (from
// body), and a memory of minPages (below 128), followed by the sections
// after the code section.
func memoryCommand(minPages byte, code []byte, after ...[]byte) []byte {
	return concat(append([][]byte{wasmHeader,
		section(1, 0x01, 0x60, 0x00, 0x00),
		section(3, 0x01, 0x00),
		section(5, 0x01, 0x00, minPages),
		section(7, concat([]byte{0x02}, name6("_start"), []byte{0x00, 0x00}, name6("memory"), []byte{0x02, 0x00})...),
		section(10, concat([]byte{0x01}, code)...),
	}, after...)...)
}

// section encodes a section with the given id and content (all sizes here
// are below 128, so one LEB128 byte each).
func section(id byte, content ...byte) []byte {
	return concat([]byte{id, byte(len(content))}, content)
}

// body encodes a function body without locals.
func body(code ...byte) []byte {
	b := concat([]byte{0x00}, code, []byte{0x0b})
	return concat([]byte{byte(len(b))}, b)
}

// name6 encodes a short name.
func name6(s string) []byte { return concat([]byte{byte(len(s))}, []byte(s)) }

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
