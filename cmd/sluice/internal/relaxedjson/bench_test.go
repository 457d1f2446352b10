package relaxedjson

import "testing"

func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"strict", `{"id":1,"tags":["a","b"],"ok":true,"n":null,"nested":{"x":1.5},"url":"https://example.com/x"}`},
		{"relaxed", `{id:1,tags:[a,b],ok:true,n:null,nested:{x:1.5},url:https://example.com/x}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if _, err := Parse(bc.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
