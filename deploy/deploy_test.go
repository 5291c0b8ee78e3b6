package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// documents splits a multi-document YAML file.
func documents(t *testing.T, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// flagDuration returns the value of --name=D in args.
func flagDuration(t *testing.T, args []string, name string) time.Duration {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("--%s: %v", name, err)
			}
			return d
		}
	}
	t.Fatalf("no --%s=… in %q", name, args)
	return 0
}

// TestKubernetes decodes every manifest into its k8s.io/api type with
// unknown fields refused, and checks what the recipe promises: three
// replicas, probes on /healthz and /readyz, the crontab from the
// ConfigMap, and a termination grace period longer than the daemon's stop
// timeout plus its kill grace.
func TestKubernetes(t *testing.T) {
	var (
		dep *appsv1.Deployment
		cm  *corev1.ConfigMap
		sec *corev1.Secret
		pdb *policyv1.PodDisruptionBudget
	)
	for i, doc := range documents(t, filepath.Join("kubernetes", "anarchon.yaml")) {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			dep = &appsv1.Deployment{}
			obj = dep
		case "v1 ConfigMap":
			cm = &corev1.ConfigMap{}
			obj = cm
		case "v1 Secret":
			sec = &corev1.Secret{}
			obj = sec
		case "policy/v1 PodDisruptionBudget":
			pdb = &policyv1.PodDisruptionBudget{}
			obj = pdb
		default:
			t.Fatalf("document %d: unexpected %s %s", i, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("document %d (%s): %v", i, head.Kind, err)
		}
	}
	if dep == nil || cm == nil || sec == nil || pdb == nil {
		t.Fatalf("want a Deployment, ConfigMap, Secret and PodDisruptionBudget; got %v %v %v %v", dep != nil, cm != nil, sec != nil, pdb != nil)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 3 {
		t.Errorf("replicas: %v, want 3", dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	stop := flagDuration(t, c.Args, "stop-timeout")
	kill := flagDuration(t, c.Args, "kill-grace")
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= stop+kill {
		t.Errorf("terminationGracePeriodSeconds (%s) is not longer than --stop-timeout %v + --kill-grace %v", fmtSeconds(pod.TerminationGracePeriodSeconds), stop, kill)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "http" {
			t.Errorf("want an HTTP probe on %s, port http: %+v", path, probe)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || !containsArg(c.Args, "--http=:9090") || c.Ports[0].ContainerPort != 9090 {
		t.Errorf("port %+v does not match the --http flag in %q", c.Ports, c.Args)
	}
	if _, ok := cm.Data["crontab"]; !ok || !containsArg(c.Args, "--crontab=/etc/anarchon/crontab") {
		t.Errorf("the ConfigMap's crontab key is not the --crontab file")
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name && m.MountPath == "/etc/anarchon" {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("ConfigMap %s is not mounted at /etc/anarchon", cm.Name)
	}
	// The store URL and the HTTP token come from the Secret as the
	// daemon's own variables, never on the command line.
	fromSecret := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == sec.Name {
			fromSecret[e.Name] = e.ValueFrom.SecretKeyRef.Key
		}
	}
	for _, name := range []string{"ANARCHON_STORE", "ANARCHON_UI_TOKEN"} {
		key, ok := fromSecret[name]
		if !ok {
			t.Errorf("%s does not come from Secret %s: env %+v", name, sec.Name, c.Env)
			continue
		}
		if _, ok := sec.StringData[key]; !ok {
			t.Errorf("%s: Secret %s has no key %q", name, sec.Name, key)
		}
	}
	if tok := sec.StringData[fromSecret["ANARCHON_UI_TOKEN"]]; len(tok) < 16 {
		t.Errorf("the Secret's token %q is shorter than the 16 characters the daemon wants", tok)
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--store") || strings.HasPrefix(a, "--http-token") {
			t.Errorf("argument %q: the store and the token are given by environment only", a)
		}
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("pods do not run as non-root")
	}
	sel := dep.Spec.Selector.MatchLabels
	for k, v := range sel {
		if pdb.Spec.Selector.MatchLabels[k] != v || dep.Spec.Template.Labels[k] != v {
			t.Errorf("label %s=%s: the selectors of the Deployment, its pods and the PodDisruptionBudget differ", k, v)
		}
	}
}

func fmtSeconds(s *int64) string {
	if s == nil {
		return "unset"
	}
	return (time.Duration(*s) * time.Second).String()
}

func containsArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// TestSystemdUnit runs systemd-analyze verify on the unit, with ExecStart's
// binary path pointed at an executable that exists here (verify refuses a
// missing one); any message it prints fails the test, since it exits 0 on
// a setting it ignores. It also checks the stop timing.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("systemd", "anarchon.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	if !regexp.MustCompile(`(?m)^KillMode=mixed$`).MatchString(unit) {
		t.Errorf("no KillMode=mixed")
	}
	m := regexp.MustCompile(`(?m)^ExecStart=(\S+) .*--stop-timeout (\S+) --kill-grace (\S+)`).FindStringSubmatch(unit)
	if regexp.MustCompile(`(?m)^ExecStart=.*--store`).MatchString(unit) {
		t.Errorf("ExecStart passes the store on the command line; the EnvironmentFile's ANARCHON_STORE is enough")
	}
	if !regexp.MustCompile(`(?m)^EnvironmentFile=`).MatchString(unit) {
		t.Errorf("no EnvironmentFile for ANARCHON_STORE")
	}
	ts := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)$`).FindStringSubmatch(unit)
	if m == nil || ts == nil {
		t.Fatalf("want ExecStart with --stop-timeout and --kill-grace, and TimeoutStopSec")
	}
	stop, err1 := time.ParseDuration(m[2])
	kill, err2 := time.ParseDuration(m[3])
	limit, err3 := time.ParseDuration(ts[1])
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("durations: %v %v %v", err1, err2, err3)
	}
	if limit <= stop+kill {
		t.Errorf("TimeoutStopSec %v is not longer than --stop-timeout %v + --kill-grace %v", limit, stop, kill)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-analyze is not installed: %v", err)
		}
		t.Skipf("systemd-analyze not installed (apt install systemd); under CI=true this fails")
	}
	exe, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "anarchon.service")
	if err := os.WriteFile(copyPath, []byte(strings.Replace(unit, "ExecStart="+m[1], "ExecStart="+exe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(analyze, "verify", copyPath)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || out.Len() > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out.String())
	}
}

// TestDockerfile checks the image recipe's promises, which no Dockerfile
// linter here checks: two stages, a static build, the daemon as PID 1
// (it reaps orphans there itself, so there is no init), a
// non-root user, and a shell in the final image for crontab lines.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var stages []string // instructions of each stage, continuation lines joined
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "FROM ") {
			stages = append(stages, "")
		}
		if len(stages) == 0 {
			if !strings.HasPrefix(line, "ARG ") {
				t.Fatalf("instruction before FROM: %s", line)
			}
			continue
		}
		stages[len(stages)-1] += line + "\n"
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, run)", len(stages))
	}
	build, final := stages[0], stages[1]
	if strings.Contains(final, "tini") || strings.Contains(final, "--store") {
		t.Errorf("final stage: no init (the daemon reaps as PID 1) and no --store on the command line (ANARCHON_STORE):\n%s", final)
	}
	for _, want := range []string{"CGO_ENABLED=0", "go build", "--version"} {
		if !strings.Contains(build, want) {
			t.Errorf("build stage lacks %q", want)
		}
	}
	for _, re := range []string{
		`(?m)^FROM alpine:\S+$`,                          // BusyBox /bin/sh for the crontab lines
		`(?m)^USER 10001:10001$`,                         // non-root
		`(?m)^ENTRYPOINT \["/usr/local/bin/anarchon"\]$`, // PID 1: it reaps orphans
		`(?m)^ENV ANARCHON_STORE=\S+$`,
		`(?m)^COPY --from=build /out/anarchon /usr/local/bin/anarchon$`,
	} {
		if !regexp.MustCompile(re).MatchString(final) {
			t.Errorf("final stage does not match %s", re)
		}
	}
}
