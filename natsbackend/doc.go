// Package natsbackend is anarchon's NATS JetStream backend.
package natsbackend
