package reliability_test

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/reliability"
)

func TestMain(m *testing.M) {
	code := m.Run()
	reliability.Cleanup()
	os.Exit(code)
}
