package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables FromEnv reads; they override the config file.
const (
	EnvEndpoint = "SLUICE_ENDPOINT" // the API's URL
	EnvKey      = "SLUICE_KEY"      // the access key as ID:SECRET
	EnvAccount  = "SLUICE_ACCOUNT"  // the account (12 digits)
	EnvConfig   = "SLUICE_CONFIG"   // the config file's path
)

// Config is where and as whom a client connects: what `sluice login`
// saves and FromEnv loads.
type Config struct {
	Endpoint string `json:"endpoint"`
	// Key is the access key as ID:SECRET.
	Key string `json:"key"`
	// Account is empty for DefaultAccount.
	Account string `json:"account,omitempty"`
}

// Client builds a client from c.
func (c Config) Client(opts ...Option) (*Client, error) {
	if c.Endpoint == "" {
		return nil, fmt.Errorf("client: no endpoint: set %s or run `sluice login --endpoint URL --key ID:SECRET`", EnvEndpoint)
	}
	if c.Key == "" {
		return nil, fmt.Errorf("client: no access key: set %s=ID:SECRET or run `sluice login --endpoint URL --key ID:SECRET`", EnvKey)
	}
	id, secret, ok := strings.Cut(c.Key, ":")
	if !ok || id == "" || secret == "" {
		return nil, errors.New("client: access key: want ID:SECRET")
	}
	if c.Account != "" {
		opts = append([]Option{WithAccount(c.Account)}, opts...)
	}
	return New(c.Endpoint, id, secret, opts...)
}

// ConfigPath is the config file's path: $SLUICE_CONFIG, else
// sluice/config.json in $XDG_CONFIG_HOME, else in the user's config
// folder (~/.config on Linux, ~/Library/Application Support on macOS).
func ConfigPath() (string, error) {
	if p := os.Getenv(EnvConfig); p != "" {
		return p, nil
	}
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "sluice", "config.json"), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("client: config folder: %w (set %s)", err, EnvConfig)
	}
	return filepath.Join(dir, "sluice", "config.json"), nil
}

// ReadConfig reads the config file at path. A missing file is not an
// error: it returns a zero Config and ok false.
func ReadConfig(path string) (cfg Config, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, false, nil
	}
	if err != nil {
		return Config{}, false, fmt.Errorf("client: read config %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return Config{}, false, fmt.Errorf("client: config %s: %w", path, err)
	}
	return cfg, true, nil
}

// WriteConfig writes cfg to path, readable by the user only (0600), making
// its folder as needed. It replaces the file atomically.
func WriteConfig(path string, cfg Config) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("client: config folder: %w", err)
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return fmt.Errorf("client: write config %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("client: write config %s: %w", path, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("client: write config %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("client: write config %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("client: write config %s: %w", path, err)
	}
	return nil
}

// LoadConfig returns the config file at path (ConfigPath when empty) with
// the environment variables SLUICE_ENDPOINT, SLUICE_KEY and SLUICE_ACCOUNT
// overriding its fields.
func LoadConfig(path string) (Config, error) {
	return loadConfig(path, os.Getenv)
}

func loadConfig(path string, getenv func(string) string) (Config, error) {
	if path == "" {
		p, err := ConfigPath()
		if err != nil {
			return Config{}, err
		}
		path = p
	}
	cfg, _, err := ReadConfig(path)
	if err != nil {
		return cfg, err
	}
	if v := getenv(EnvEndpoint); v != "" {
		cfg.Endpoint = v
	}
	if v := getenv(EnvKey); v != "" {
		cfg.Key = v
	}
	if v := getenv(EnvAccount); v != "" {
		cfg.Account = v
	}
	return cfg, nil
}

// FromEnv builds a client from SLUICE_ENDPOINT, SLUICE_KEY (ID:SECRET) and
// SLUICE_ACCOUNT, falling back for each on the config file `sluice login`
// writes (see ConfigPath).
func FromEnv(opts ...Option) (*Client, error) {
	cfg, err := LoadConfig("")
	if err != nil {
		return nil, err
	}
	return cfg.Client(opts...)
}
