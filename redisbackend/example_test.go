package redisbackend_test

import (
	"context"
	"fmt"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/redisbackend"
	"github.com/redis/go-redis/v9"
)

// A backend on a client the application owns and closes itself.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{
		Addr:     "127.0.0.1:6379",
		Password: "from a secret store", // AUTH; TLSConfig for TLS
	})
	defer client.Close()
	b, err := redisbackend.New(client, &redisbackend.Options{Prefix: "billing"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Init(ctx); err != nil {
		fmt.Println("redis is not reachable:", err)
		return
	}
	won, err := b.Claim(ctx, anarchon.ClaimInput{Job: "invoice", Slot: 1767225600000, Token: "tok-1", InstanceID: "host-a"})
	fmt.Println(won, err)
}

// A backend that owns its client, on a TLS connection, waiting for one
// replica before a claim counts.
func ExampleOpen() {
	b, err := redisbackend.Open("rediss://app:secret@redis.internal:6380/0", &redisbackend.Options{
		Replicas:       1,
		ReplicaTimeout: 500 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err) // the password never appears here
		return
	}
	defer b.Close(context.Background())
	fmt.Println(b.Name(), b.DedupeWindow() == anarchon.Forever)
}
