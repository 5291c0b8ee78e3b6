package natsbackend

import (
	"context"
	"errors"
	"fmt"

	"github.com/anarchon/anarchon"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// permanentErrs are client and JetStream errors that repeating the call
// gives again.
var permanentErrs = []error{
	jetstream.ErrBucketNotFound, jetstream.ErrStreamNotFound, jetstream.ErrKeyValueConfigRequired,
	jetstream.ErrInvalidBucketName, jetstream.ErrInvalidKey,
	jetstream.ErrJetStreamNotEnabled, jetstream.ErrJetStreamNotEnabledForAccount,
	nats.ErrConnectionClosed, // a closed connection never reconnects
	nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired,
	nats.ErrPermissionViolation, nats.ErrBadSubject, nats.ErrMaxPayload,
}

// errCodeReplicasNotSupported is nats-server's API error "replicas > 1
// not supported in non-clustered mode" (status 500): Options.Replicas
// above 1 on a server without a cluster, which no retry fixes.
const errCodeReplicasNotSupported jetstream.ErrorCode = 10074

// IsPermanent reports whether err is a NATS or JetStream error that
// repeating the call gives again: a bucket or stream that does not exist,
// JetStream not enabled, a closed connection, refused credentials or
// permissions, an invalid subject or key, a payload over the server's
// limit, and JetStream API errors with status 400, 401, 403 or 404 (bad
// request, not found), except a wrong last sequence (a compare-and-set
// conflict, which the backend retries itself), and a bucket or stream
// of several replicas asked of a server without a cluster (API error
// 10074, status 500). Everything else is
// transient: timeouts, no responders (a stream leader being elected), 500
// and 503 API errors (insufficient resources, temporarily unavailable), a
// lost connection, a context. The backend marks the errors it matches
// with anarchon.Permanent.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	for _, p := range permanentErrs {
		if errors.Is(err, p) {
			return true
		}
	}
	var je jetstream.JetStreamError
	if !errors.As(err, &je) || je.APIError() == nil {
		return false
	}
	api := je.APIError()
	switch api.ErrorCode {
	case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
		return false
	case errCodeReplicasNotSupported:
		return true
	}
	switch api.Code {
	case 400, 401, 403, 404:
		return true
	}
	return false
}

// ErrInvalid is wrapped by every error about bad input: an empty job name
// or token, or an option out of range. Test for it with errors.Is.
var ErrInvalid = anarchon.Permanent(errors.New("natsbackend: invalid input"))

// ErrBucketMismatch is returned by Init when the KV bucket already exists
// with a TTL shorter than Options.ClaimTTL: the store would forget claims
// sooner than [Backend.DedupeWindow] promises.
var ErrBucketMismatch = anarchon.Permanent(errors.New("natsbackend: existing bucket forgets claims sooner than ClaimTTL"))

// ErrNoData is returned, with Options.MustExist, by Init and every other
// call when the KV bucket or the history stream does not exist: the
// backend created nothing.
var ErrNoData = anarchon.Permanent(errors.New("natsbackend: no anarchon data (bucket or stream missing)"))

// wrap translates a driver error at the boundary: it keeps the native
// error reachable, adds anarchon.ErrClosed when the connection is gone,
// and marks what a retry cannot fix (IsPermanent) anarchon.Permanent.
func (b *Backend) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, nats.ErrConnectionClosed) {
		return anarchon.Permanent(fmt.Errorf("natsbackend: %s: %w: %w", op, anarchon.ErrClosed, err))
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		b.rebind.Store(true) // the bucket or stream may be gone: bind again next time
	}
	e := fmt.Errorf("natsbackend: %s: %w", op, err)
	if IsPermanent(err) {
		return anarchon.Permanent(e)
	}
	return e
}

// ctxErr returns ctx's error, wrapped with op, once ctx is done, so that
// loops of several server calls stop at once and the caller can test for
// context.DeadlineExceeded or context.Canceled with errors.Is.
func ctxErr(ctx context.Context, op string) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("natsbackend: %s: %w: %w", op, err, cause)
	}
	return fmt.Errorf("natsbackend: %s: %w", op, err)
}
