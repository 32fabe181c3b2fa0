package redislockotel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/redislock/redislock"
)

// InstrumentTracing adds a hook to c that traces its obtain calls,
// releases and refreshes, of every primitive (see the package
// documentation), with the tracer of [WithTracerProvider]. Call it once
// per Client, before the Client is used (see [redislock.Client.AddHook]);
// each call adds another hook. It returns no error today; the error is
// there for tracers that may fail.
func InstrumentTracing(c *redislock.Client, opts ...TracingOption) error {
	cfg := newConfig()
	for _, o := range opts {
		o.applyTracing(cfg)
	}
	c.AddHook(newTracingHook(cfg))
	return nil
}

func newTracingHook(cfg *config) *tracingHook {
	h := &tracingHook{cfg: cfg, tracer: cfg.tp.Tracer(instrumentationName)}
	h.bufs.New = func() any {
		b := make([]attribute.KeyValue, 0, 8)
		return &b
	}
	return h
}

// tracingHook starts a span in each Start method and ends it in the
// matching Done. The span is found again through a context key of the
// hook's own, so that the spans of another hook in between do not mix in.
//
// What is the same for many spans is made once: the names and start
// options of each kind and name (kinds without a key-name function are
// kept in an array, the others in a map), and the attribute slices that
// each Done passes to the span come from a pool, so that the hook's own
// work allocates nothing per span beyond its context value.
type tracingHook struct {
	redislock.NopHook
	cfg    *config
	tracer trace.Tracer

	byKind [8]atomic.Pointer[spanSet] // without a key-name function, by kind
	named  sync.Map                   // seriesKey → *spanSet, with one
	bufs   sync.Pool                  // *[]attribute.KeyValue
}

// spanSet is what the spans of one kind and name share.
type spanSet struct {
	obtain, release, refresh string // span names
	opts                     []trace.SpanStartOption
	attrs                    []attribute.KeyValue // set with the others at the end
}

// The span names of each kind: obtain, release, refresh.
var spanNames = [...][3]string{
	redislock.KindLock:      {"redislock.obtain", "redislock.release", "redislock.refresh"},
	redislock.KindSemaphore: {"redislock.semaphore.acquire", "redislock.semaphore.release", "redislock.semaphore.refresh"},
	redislock.KindRead:      {"redislock.rwmutex.rlock", "redislock.rwmutex.runlock", "redislock.rwmutex.refresh"},
	redislock.KindWrite:     {"redislock.rwmutex.lock", "redislock.rwmutex.unlock", "redislock.rwmutex.refresh"},
	redislock.KindElection:  {"redislock.election.campaign", "redislock.election.resign", "redislock.election.refresh"},
}

func (h *tracingHook) newSpanSet(kind redislock.Kind, name string) *spanSet {
	names := spanNames[redislock.KindLock]
	if int(kind) < len(spanNames) && spanNames[kind][0] != "" {
		names = spanNames[kind]
	}
	attrs := h.cfg.baseAttrs(kind, name)
	return &spanSet{
		obtain: names[0], release: names[1], refresh: names[2],
		opts:  []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
		attrs: attrs,
	}
}

// set returns the spanSet of a handle of kind with keys.
func (h *tracingHook) set(kind redislock.Kind, keys []string) *spanSet {
	if h.cfg.keyName == nil && int(kind) < len(h.byKind) {
		p := &h.byKind[kind]
		if s := p.Load(); s != nil {
			return s
		}
		s := h.newSpanSet(kind, "")
		p.CompareAndSwap(nil, s)
		return p.Load()
	}
	key := seriesKey{kind: kind, name: h.cfg.name(keys)}
	if s, ok := h.named.Load(key); ok {
		return s.(*spanSet)
	}
	s, _ := h.named.LoadOrStore(key, h.newSpanSet(kind, key.name))
	return s.(*spanSet)
}

type spanKey struct{ h *tracingHook }

// start starts a span; it is found again by the Done methods only when
// it records (one that the sampler dropped costs no more than that).
func (h *tracingHook) start(ctx context.Context, name string, opts []trace.SpanStartOption) context.Context {
	ctx, span := h.tracer.Start(ctx, name, opts...)
	if !span.IsRecording() {
		return ctx
	}
	return context.WithValue(ctx, spanKey{h}, span)
}

func (h *tracingHook) span(ctx context.Context) trace.Span {
	if s, ok := ctx.Value(spanKey{h}).(trace.Span); ok {
		return s
	}
	return nil
}

// end sets the attributes in buf on s and ends it, then gives the buffer
// back for another span: SetAttributes must not keep the slice, and the
// spans of the SDK, of go.opentelemetry.io/auto/sdk and the no-op ones
// copy it or drop it.
func (h *tracingHook) end(s trace.Span, buf *[]attribute.KeyValue) {
	s.SetAttributes(*buf...)
	s.End()
	clear(*buf) // drop the strings it refers to
	*buf = (*buf)[:0]
	h.bufs.Put(buf)
}

func (h *tracingHook) buf() *[]attribute.KeyValue { return h.bufs.Get().(*[]attribute.KeyValue) }

func (h *tracingHook) ObtainStart(ctx context.Context, e redislock.ObtainEvent) context.Context {
	s := h.set(e.Kind, e.Keys)
	return h.start(ctx, s.obtain, s.opts)
}

// ObtainAttempt adds an event for each attempt that did not obtain the
// handle: the one that did is the span's end, whose attributes say all
// that it would (attempts, wait, handed_over).
func (h *tracingHook) ObtainAttempt(ctx context.Context, e redislock.AttemptEvent) {
	if e.Outcome == redislock.OutcomeObtained {
		return
	}
	s := h.span(ctx)
	if s == nil {
		return
	}
	attrs := make([]attribute.KeyValue, 2, 3)
	attrs[0], attrs[1] = attrAttempt.Int(e.Attempt), attrOutcome.String(e.Outcome.String())
	if e.Blocked {
		attrs = append(attrs, attrBlocked.Bool(true))
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
	buf := h.buf()
	*buf = append(*buf, h.set(e.Kind, e.Keys).attrs...)
	*buf = append(*buf,
		attrOutcome.String(e.Outcome.String()),
		attrAttempts.Int(e.Attempts),
		attrWait.String(e.Wait.String()),
		attrTTL.Float64(e.TTL.Seconds()),
	)
	if len(e.Keys) > 1 {
		*buf = append(*buf, attrKeys.Int(len(e.Keys)))
	}
	if e.HandedOver {
		*buf = append(*buf, attrHandedOver.Bool(true))
	}
	if e.Outcome == redislock.OutcomeError {
		s.SetStatus(codes.Error, e.Err.Error())
	}
	h.end(s, buf)
}

func (h *tracingHook) ReleaseStart(ctx context.Context, e redislock.ReleaseEvent) context.Context {
	s := h.set(e.Kind, e.Keys)
	return h.start(ctx, s.release, s.opts)
}

func (h *tracingHook) ReleaseDone(ctx context.Context, e redislock.ReleaseEvent) {
	s := h.span(ctx)
	if s == nil {
		return
	}
	buf := h.buf()
	*buf = append(*buf, h.set(e.Kind, e.Keys).attrs...)
	if e.HandedOver > 0 {
		*buf = append(*buf, attrHandedOver.Int(e.HandedOver))
	}
	if e.EndsHold {
		*buf = append(*buf, attrHeld.Float64(e.Held.Seconds()))
	}
	if e.Err != nil {
		// Not held: the handle had been lost before; an error: Redis
		// failed and the keys expire by their TTL. Both are worth a look.
		*buf = append(*buf, attrEnd.String(releaseEnd(e.Err)))
		s.SetStatus(codes.Error, e.Err.Error())
	}
	h.end(s, buf)
}

func (h *tracingHook) RefreshStart(ctx context.Context, e redislock.RefreshEvent) context.Context {
	if e.KeepAlive {
		return ctx
	}
	s := h.set(e.Kind, e.Keys)
	return h.start(ctx, s.refresh, s.opts)
}

func (h *tracingHook) RefreshDone(ctx context.Context, e redislock.RefreshEvent) {
	s := h.span(ctx)
	if s == nil || e.KeepAlive {
		return
	}
	outcome := redislock.OutcomeObtained
	if e.Err != nil {
		outcome = redislock.OutcomeError
		if errors.Is(e.Err, redislock.ErrNotObtained) {
			outcome = redislock.OutcomeNotObtained
		}
		s.SetStatus(codes.Error, e.Err.Error())
	}
	buf := h.buf()
	*buf = append(*buf, h.set(e.Kind, e.Keys).attrs...)
	*buf = append(*buf, attrOutcome.String(outcome.String()), attrTTL.Float64(e.TTL.Seconds()))
	h.end(s, buf)
}
