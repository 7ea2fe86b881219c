// E2e: a pod with schedulerName phalanx that requests GPUs makes the real kube-scheduler call the
// extender configured in deploy/scheduler/kube-scheduler-config.yaml over HTTP, and obeys its answers.
// The extender here is a tiny stand-in for phalanx-extender speaking extender v1 JSON (PascalCase,
// k8s.io/kube-scheduler/extender/v1 types): it passes only the nodes listed in the pod's annotation
// e2e.phalanx.io/allow, scores the node in e2e.phalanx.io/prefer 10 and others 0, and records every call.
package cluster_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

type extenderCall struct {
	verb, method, contentType string
	pod                       string   // namespace/name
	keys                      []string // top-level JSON keys of the request, sorted
	args                      extenderv1.ExtenderArgs
}

type testExtender struct {
	mu    sync.Mutex
	calls []extenderCall
}

func (e *testExtender) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var raw map[string]json.RawMessage
	var args extenderv1.ExtenderArgs
	if err := errors.Join(json.Unmarshal(body, &raw), json.Unmarshal(body, &args)); err != nil || args.Pod == nil {
		http.Error(w, "bad extender args", http.StatusBadRequest)
		return
	}
	call := extenderCall{
		verb: strings.TrimPrefix(r.URL.Path, "/"), method: r.Method, contentType: r.Header.Get("Content-Type"),
		pod: args.Pod.Namespace + "/" + args.Pod.Name, args: args,
	}
	for k := range raw {
		call.keys = append(call.keys, k)
	}
	slices.Sort(call.keys)
	e.mu.Lock()
	e.calls = append(e.calls, call)
	e.mu.Unlock()

	var nodes []string
	if args.NodeNames != nil {
		nodes = *args.NodeNames
	}
	allow := strings.Split(args.Pod.Annotations["e2e.phalanx.io/allow"], ",")
	var reply any
	switch call.verb {
	case "filter":
		result := extenderv1.ExtenderFilterResult{NodeNames: &[]string{}, FailedNodes: extenderv1.FailedNodesMap{}}
		for _, n := range nodes {
			if slices.Contains(allow, n) {
				*result.NodeNames = append(*result.NodeNames, n)
			} else {
				result.FailedNodes[n] = "test extender: not in allow list"
			}
		}
		reply = result
	case "prioritize":
		scores := extenderv1.HostPriorityList{}
		for _, n := range nodes {
			score := int64(0)
			if n == args.Pod.Annotations["e2e.phalanx.io/prefer"] {
				score = extenderv1.MaxExtenderPriority
			}
			scores = append(scores, extenderv1.HostPriority{Host: n, Score: score})
		}
		reply = scores
	case "preempt":
		// No victims anywhere: every candidate node is dropped.
		reply = extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{}}
	default:
		http.Error(w, "unknown verb", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

func (e *testExtender) callsFor(pod string) []extenderCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []extenderCall
	for _, c := range e.calls {
		if c.pod == pod {
			out = append(out, c)
		}
	}
	return out
}

// serveExtender listens on the cluster's PHALANX_EXTENDER_URL until the test ends.
func serveExtender(t *testing.T) *testExtender {
	t.Helper()
	u, err := url.Parse(clusterEnv(t)["PHALANX_EXTENDER_URL"])
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("extender port: %v", err)
	}
	ext := &testExtender{}
	srv := &http.Server{Handler: ext}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ext
}

func TestPhalanxProfileCallsExtender(t *testing.T) {
	ext := serveExtender(t)
	client := newClient(t)
	ns := newNamespace(t, client)
	nodes := addGPUNodes(t, client, ns+"-gpu", 3, 8)
	allowed := []string{nodes[0], nodes[1]}
	preferred := nodes[1]

	// 1. A GPU pod: filtered and scored by the extender, bound where it says.
	createPod(t, client, ns, newPod("gpu", "phalanx", 1, map[string]string{
		"e2e.phalanx.io/allow": strings.Join(allowed, ","), "e2e.phalanx.io/prefer": preferred,
	}))
	pod, _ := waitPod(t, client, ns, "gpu", "bound", 60*time.Second, func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
	if pod.Spec.NodeName != preferred {
		t.Errorf("gpu bound to %s, want the extender's choice %s", pod.Spec.NodeName, preferred)
	}
	waitPod(t, client, ns, "gpu", "Running", 30*time.Second, isRunning)
	assertScheduledBy(t, client, ns, "gpu", "phalanx")

	var verbs []string
	for _, c := range ext.callsFor(ns + "/gpu") {
		verbs = append(verbs, c.verb)
		if c.method != http.MethodPost || c.contentType != "application/json" {
			t.Errorf("%s call: %s with Content-Type %q", c.verb, c.method, c.contentType)
		}
		// nodeCacheCapable: true sends node names only, with the wire's PascalCase keys.
		if want := []string{"NodeNames", "Nodes", "Pod"}; !slices.Equal(c.keys, want) {
			t.Errorf("%s request keys %v, want %v", c.verb, c.keys, want)
		}
		if c.args.Nodes != nil || c.args.NodeNames == nil {
			t.Errorf("%s request: Nodes=%v NodeNames=%v, want names only", c.verb, c.args.Nodes, c.args.NodeNames)
		}
		if c.verb == "filter" && !(slices.Contains(*c.args.NodeNames, allowed[0]) && slices.Contains(*c.args.NodeNames, allowed[1])) {
			t.Errorf("filter got %v, want at least %v", *c.args.NodeNames, allowed)
		}
		if c.verb == "prioritize" && !slices.Equal(slices.Sorted(slices.Values(*c.args.NodeNames)), allowed) {
			t.Errorf("prioritize got %v, want the filtered nodes %v", *c.args.NodeNames, allowed)
		}
	}
	t.Logf("extender calls for gpu: %v; bound to %s", verbs, pod.Spec.NodeName)
	if !slices.Contains(verbs, "filter") || !slices.Contains(verbs, "prioritize") {
		t.Errorf("extender calls for gpu: %v, want filter and prioritize", verbs)
	}

	// 2. A GPU pod the extender rejects everywhere stays Pending with the extender's reason.
	createPod(t, client, ns, newPod("rejected", "phalanx", 1, map[string]string{"e2e.phalanx.io/allow": ""}))
	waitPod(t, client, ns, "rejected", "unschedulable", 60*time.Second, func(p *v1.Pod) bool {
		c := condition(p, v1.PodScheduled)
		return c != nil && c.Status == v1.ConditionFalse && strings.Contains(c.Message, "test extender: not in allow list")
	})
	if len(ext.callsFor(ns+"/rejected")) == 0 {
		t.Error("no extender call for rejected")
	}

	// 3. A phalanx pod without GPUs is outside managedResources: scheduled without the extender.
	createPod(t, client, ns, newPod("cpu-only", "phalanx", 0, nil))
	waitPod(t, client, ns, "cpu-only", "Running", 60*time.Second, isRunning)
	assertScheduledBy(t, client, ns, "cpu-only", "phalanx")
	if calls := ext.callsFor(ns + "/cpu-only"); len(calls) != 0 {
		t.Errorf("extender called for a pod without GPUs: %d calls", len(calls))
	}
}
