// Command plain is a Go program that does not use the sluice SDK; built as
// a reactor it exports _initialize without sluice_alloc/sluice_handle.
package main

import "fmt"

func main() { fmt.Println("hello") }
