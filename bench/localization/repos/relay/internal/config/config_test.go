package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoadFileAndEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.yaml")
	os.WriteFile(path, []byte("secrets: a, b\nsignature_tolerance: 300\nworkers: 2\n"), 0o600)
	env := map[string]string{"RELAY_WORKERS": "6"}
	cfg, err := Load(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 6 {
		t.Errorf("Workers = %d, want env override 6", cfg.Workers)
	}
	if cfg.SignatureTolerance != 5*time.Minute {
		t.Errorf("SignatureTolerance = %v, want 5m0s", cfg.SignatureTolerance)
	}
}
