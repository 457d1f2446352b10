package pgqueue

// SetWaitingHook makes c call f whenever a long poll starts waiting.
func SetWaitingHook(c *Client, f func()) { c.waiting = f }
