package redislockotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/redislock/redislock"
)

// InstrumentTracing adds a hook to c that traces its obtain calls,
// releases and refreshes (see the package documentation), with the tracer
// of [WithTracerProvider]. Call it once per Client, before the Client is
// used (see [redislock.Client.AddHook]); each call adds another hook. It
// returns no error today; the error is there for tracers that may fail.
func InstrumentTracing(c *redislock.Client, opts ...TracingOption) error {
	cfg := newConfig()
	for _, o := range opts {
		o.applyTracing(cfg)
	}
	c.AddHook(newTracingHook(cfg))
	return nil
}

func newTracingHook(cfg *config) *tracingHook {
	return &tracingHook{
		cfg:    cfg,
		tracer: cfg.tp.Tracer(instrumentationName),
		opts:   []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(cfg.attrs...)},
	}
}

// tracingHook starts a span in each Start method and ends it in the
// matching Done. The span is found again through a context key of the
// hook's own, so that the spans of another hook in between do not mix in.
type tracingHook struct {
	redislock.NopHook
	cfg    *config
	tracer trace.Tracer
	opts   []trace.SpanStartOption // the same for every span, made once
}

type spanKey struct{ h *tracingHook }

// start starts a span; the attributes of the event go on it only when it
// records (a span that the sampler dropped costs no more than that).
func (h *tracingHook) start(ctx context.Context, name string, kind redislock.Kind, keys []string, ttl time.Duration) context.Context {
	ctx, span := h.tracer.Start(ctx, name, h.opts...)
	if !span.IsRecording() {
		return ctx
	}
	span.SetAttributes(attrKind.String(kind.String()), attrKeys.Int(len(keys)))
	if n := h.cfg.name(keys); n != "" {
		span.SetAttributes(attrName.String(n))
	}
	if ttl > 0 {
		span.SetAttributes(attrTTL.Float64(ttl.Seconds()))
	}
	return context.WithValue(ctx, spanKey{h}, span)
}

func (h *tracingHook) span(ctx context.Context) trace.Span {
	if s, ok := ctx.Value(spanKey{h}).(trace.Span); ok {
		return s
	}
	return nil
}

func (h *tracingHook) ObtainStart(ctx context.Context, e redislock.ObtainEvent) context.Context {
	return h.start(ctx, "redislock.obtain", e.Kind, e.Keys, e.TTL)
}

func (h *tracingHook) ObtainAttempt(ctx context.Context, e redislock.AttemptEvent) {
	s := h.span(ctx)
	if s == nil {
		return
	}
	// Only what is true, to keep each event small: blocked and
	// handed_over are absent when false.
	attrs := make([]attribute.KeyValue, 2, 4)
	attrs[0], attrs[1] = attrAttempt.Int(e.Attempt), attrOutcome.String(e.Outcome.String())
	if e.Blocked {
		attrs = append(attrs, attrBlocked.Bool(true))
	}
	if e.HandedOver {
		attrs = append(attrs, attrHandedOver.Bool(true))
	}
	s.AddEvent("attempt", trace.WithAttributes(attrs...))
	if e.Err != nil {
		s.RecordError(e.Err)
	}
}

func (h *tracingHook) ObtainDone(ctx context.Context, e redislock.ObtainEvent) {
	s := h.span(ctx)
	if s == nil {
		return
	}
	s.SetAttributes(
		attrOutcome.String(e.Outcome.String()),
		attrAttempts.Int(e.Attempts),
		attrWait.String(e.Wait.String()),
	)
	if e.HandedOver {
		s.SetAttributes(attrHandedOver.Bool(true))
	}
	if e.Outcome == redislock.OutcomeError {
		s.SetStatus(codes.Error, e.Err.Error())
	}
	s.End()
}

func (h *tracingHook) ReleaseStart(ctx context.Context, e redislock.ReleaseEvent) context.Context {
	return h.start(ctx, "redislock.release", e.Kind, e.Keys, 0)
}

func (h *tracingHook) ReleaseDone(ctx context.Context, e redislock.ReleaseEvent) {
	s := h.span(ctx)
	if s == nil {
		return
	}
	if e.HandedOver > 0 {
		s.SetAttributes(attrHandedOver.Int(e.HandedOver))
	}
	if e.EndsHold {
		s.SetAttributes(attrHeld.Float64(e.Held.Seconds()))
	}
	if e.Err != nil {
		// Not held: the lock had been lost before; an error: Redis failed
		// and the keys expire by their TTL. Both are worth a look.
		s.SetAttributes(attrEnd.String(releaseEnd(e.Err)))
		s.SetStatus(codes.Error, e.Err.Error())
	}
	s.End()
}

func (h *tracingHook) RefreshStart(ctx context.Context, e redislock.RefreshEvent) context.Context {
	if e.KeepAlive {
		return ctx
	}
	return h.start(ctx, "redislock.refresh", e.Kind, e.Keys, e.TTL)
}

func (h *tracingHook) RefreshDone(ctx context.Context, e redislock.RefreshEvent) {
	s := h.span(ctx)
	if s == nil || e.KeepAlive {
		return
	}
	if e.Err != nil {
		outcome := redislock.OutcomeError
		if errors.Is(e.Err, redislock.ErrNotObtained) {
			outcome = redislock.OutcomeNotObtained
		}
		s.SetAttributes(attrOutcome.String(outcome.String()))
		s.SetStatus(codes.Error, e.Err.Error())
	} else {
		s.SetAttributes(attrOutcome.String(redislock.OutcomeObtained.String()))
	}
	s.End()
}
