package natsbackend

import (
	"errors"

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

// IsPermanent reports whether err is a NATS or JetStream error that
// repeating the call gives again: a bucket or stream that does not exist,
// JetStream not enabled, a closed connection, refused credentials or
// permissions, an invalid subject or key, a payload over the server's
// limit, and JetStream API errors with status 400, 401, 403 or 404 (bad
// request, not found), except a wrong last sequence (a compare-and-set
// conflict, which the backend retries itself). Everything else is
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
	}
	switch api.Code {
	case 400, 401, 403, 404:
		return true
	}
	return false
}
