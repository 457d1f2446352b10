//go:build !wasip1

package sdk

import "embed"

// Sources are the guest SDKs' source files, which `sluice new` vendors
// into new projects: this Go SDK (its .go files and package sdkhttp's;
// the scaffold leaves out tests and this file), sdk/c, sdk/rust and
// sdk/assemblyscript. The one copy of each SDK is the one here. Functions never contain it: it is not
// built for GOOS=wasip1.
//
//go:embed *.go sdkhttp/*.go c/*.h c/*.c rust/Cargo.toml rust/src/*.rs assemblyscript/assembly/*.ts
var Sources embed.FS
