package pgqueue

// SetWaitingHook makes c call f whenever a long poll starts waiting.
func SetWaitingHook(c *Client, f func()) { c.waiting = f }

// SetCoalesceInFlight sets how many coalesced statements per queue c runs
// at once.
func SetCoalesceInFlight(c *Client, n int) {
	c.co.send.MaxInFlight = n
	c.co.receive.MaxInFlight = n
	c.co.ack.MaxInFlight = n
}

// ForgetStoredBytes empties c's cache of accounts' stored bytes, so that
// its next check reads the last sample.
func ForgetStoredBytes(c *Client) { c.stored.Clear() }
