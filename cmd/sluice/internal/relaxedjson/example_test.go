package relaxedjson_test

import (
	"fmt"

	"github.com/sluicehq/sluice/cmd/sluice/internal/relaxedjson"
)

func ExampleParse() {
	for _, in := range []string{
		`{"hello": "world"}`, // strict: compacted
		`{hello:world}`,      // what PowerShell leaves of {"hello":"world"}
		`{id:1,tags:[a,b],ok:true,n:null,nested:{x:1.5}}`,
		`[{id:1},{id:2}]`,
		`{msg:'hello world', url:https://example.com/x?y=1, version:1.2.3}`,
		`{msg:hello world}`,
	} {
		out, err := relaxedjson.Parse(in)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(string(out))
	}
	// Output:
	// {"hello":"world"}
	// {"hello":"world"}
	// {"id":1,"tags":["a","b"],"ok":true,"n":null,"nested":{"x":1.5}}
	// [{"id":1},{"id":2}]
	// {"msg":"hello world","url":"https://example.com/x?y=1","version":"1.2.3"}
	// relaxedjson: at byte 11: expected ',' or '}' after an object member (a bare word ends at white space; quote text with spaces: 'hello world'), found 'w'
}
