package anarchonui_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/anarchon/anarchon"
	"github.com/anarchon/anarchon/anarchonui"
	"github.com/anarchon/anarchon/membackend"
)

// Mount the dashboard under /ui/ of an existing server.
func Example() {
	s := anarchon.New(membackend.New(nil), &anarchon.Options{InstanceID: "web-1"})
	_ = s.Every("report", time.Hour, func(context.Context, *anarchon.Run) error { return nil }, nil)

	mux := http.NewServeMux()
	ui := anarchonui.Handler(s, &anarchonui.Options{
		BasePath: "/ui/",
		Auth:     anarchonui.AuthFromEnv(),
	})
	mux.Handle("/ui/", http.StripPrefix("/ui", ui))

	srv := httptest.NewServer(mux) // listens on loopback: no credentials needed
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/ui/")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(page), `data-job="report"`))
	// Output: 200 true
}
