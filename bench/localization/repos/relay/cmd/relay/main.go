// Command relay runs the webhook relay.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/acme/relay/internal/config"
	"github.com/acme/relay/internal/delivery"
	"github.com/acme/relay/internal/queue"
	"github.com/acme/relay/internal/ratelimit"
	"github.com/acme/relay/internal/server"
	"github.com/acme/relay/internal/store"
)

func main() {
	configPath := flag.String("config", "", "path to relay.yaml")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(*configPath, log); err != nil {
		log.Error("relay stopped", "error", err)
		os.Exit(1)
	}
}

func run(configPath string, log *slog.Logger) error {
	cfg, err := config.Load(configPath, os.Getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	q := queue.New(cfg.VisibilityTimeout)
	subs := store.New()
	limiter := ratelimit.NewLimiter(cfg.RatePerSecond, cfg.Burst, cfg.LimiterIdleTTL)
	sweepStop := make(chan struct{})
	defer close(sweepStop)
	go limiter.RunSweeper(time.Minute, sweepStop)

	for i := 0; i < cfg.Workers; i++ {
		w := &delivery.Worker{
			Queue:   q,
			Store:   subs,
			Client:  &http.Client{Timeout: 10 * time.Second},
			Policy:  delivery.Policy{MaxAttempts: cfg.MaxAttempts, BaseDelay: cfg.BaseDelay, MaxDelay: cfg.MaxDelay},
			Limiter: limiter,
			Secret:  cfg.Secrets[0],
			Log:     log.With("worker", i),
			Now:     time.Now,
		}
		go w.Run(ctx)
	}

	srv := server.New(cfg, q, subs, log, time.Now)
	httpServer := &http.Server{Addr: cfg.Addr, Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = httpServer.Shutdown(shutdownCtx)
	}()
	log.Info("listening", "addr", cfg.Addr)
	if err := httpServer.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
