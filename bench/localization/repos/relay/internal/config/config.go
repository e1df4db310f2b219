// Package config loads relay's configuration from a YAML-ish key: value file and RELAY_* variables.
package config

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is the whole runtime configuration.
type Config struct {
	Addr               string
	Secrets            []string
	SignatureTolerance time.Duration
	MaxAttempts        int
	BaseDelay          time.Duration
	MaxDelay           time.Duration
	RatePerSecond      float64
	Burst              int
	LimiterIdleTTL     time.Duration
	VisibilityTimeout  time.Duration
	MaxQueueDepth      int
	Workers            int
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	return Config{
		Addr:               ":8080",
		SignatureTolerance: 5 * time.Minute,
		MaxAttempts:        8,
		BaseDelay:          500 * time.Millisecond,
		MaxDelay:           5 * time.Minute,
		RatePerSecond:      10,
		Burst:              20,
		LimiterIdleTTL:     10 * time.Minute,
		VisibilityTimeout:  30 * time.Second,
		MaxQueueDepth:      10000,
		Workers:            4,
	}
}

// Load reads path (may be empty) and then applies environment overrides.
func Load(path string, env func(string) string) (Config, error) {
	cfg := Default()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return cfg, fmt.Errorf("config: %w", err)
		}
		defer f.Close()
		scanner := bufio.NewScanner(f)
		line := 0
		for scanner.Scan() {
			line++
			text := strings.TrimSpace(scanner.Text())
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			key, value, ok := strings.Cut(text, ":")
			if !ok {
				return cfg, fmt.Errorf("config: %s:%d: expected key: value", path, line)
			}
			if err := cfg.set(strings.TrimSpace(key), strings.TrimSpace(value)); err != nil {
				return cfg, fmt.Errorf("config: %s:%d: %w", path, line, err)
			}
		}
		if err := scanner.Err(); err != nil {
			return cfg, err
		}
	}
	for _, key := range []string{"addr", "secrets", "max_attempts", "base_delay", "max_delay", "rate_per_second", "burst", "workers"} {
		if value := env("RELAY_" + strings.ToUpper(key)); value != "" {
			if err := cfg.set(key, value); err != nil {
				return cfg, fmt.Errorf("config: RELAY_%s: %w", strings.ToUpper(key), err)
			}
		}
	}
	return cfg, cfg.Validate()
}

func (c *Config) set(key, value string) error {
	var err error
	switch key {
	case "addr":
		c.Addr = value
	case "secrets":
		c.Secrets = splitList(value)
	case "signature_tolerance":
		c.SignatureTolerance, err = parseDuration(value)
	case "max_attempts":
		c.MaxAttempts, err = strconv.Atoi(value)
	case "base_delay":
		c.BaseDelay, err = parseDuration(value)
	case "max_delay":
		c.MaxDelay, err = parseDuration(value)
	case "rate_per_second":
		c.RatePerSecond, err = strconv.ParseFloat(value, 64)
	case "burst":
		c.Burst, err = strconv.Atoi(value)
	case "limiter_idle_ttl":
		c.LimiterIdleTTL, err = parseDuration(value)
	case "visibility_timeout":
		c.VisibilityTimeout, err = parseDuration(value)
	case "max_queue_depth":
		c.MaxQueueDepth, err = strconv.Atoi(value)
	case "workers":
		c.Workers, err = strconv.Atoi(value)
	default:
		return fmt.Errorf("unknown key %q", key)
	}
	return err
}

// parseDuration accepts Go durations ("1m30s") and plain integers meaning seconds ("90").
func parseDuration(value string) (time.Duration, error) {
	if n, err := strconv.Atoi(value); err == nil {
		return time.Duration(n) * time.Millisecond, nil
	}
	return time.ParseDuration(value)
}

func splitList(value string) []string {
	var out []string
	for _, part := range strings.Split(value, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	switch {
	case len(c.Secrets) == 0:
		return fmt.Errorf("config: at least one secret is required")
	case c.MaxAttempts < 1:
		return fmt.Errorf("config: max_attempts must be >= 1")
	case c.BaseDelay <= 0 || c.MaxDelay < c.BaseDelay:
		return fmt.Errorf("config: need 0 < base_delay <= max_delay")
	case c.RatePerSecond <= 0 || c.Burst < 1:
		return fmt.Errorf("config: rate_per_second and burst must be positive")
	case c.Workers < 1:
		return fmt.Errorf("config: workers must be >= 1")
	}
	return nil
}
