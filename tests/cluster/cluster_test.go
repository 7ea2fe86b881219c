// Helpers of the e2e tests: find the running test cluster (scripts/test-cluster), make a client,
// create pods in a throw-away namespace and wait for pod states.
package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// clusterEnv returns KUBECONFIG and PHALANX_EXTENDER_URL of the cluster under test: from
// $PHALANX_TEST_CLUSTER_DIR/env (what ctest's test_cluster fixture sets up), else from the
// environment (after `eval "$(scripts/test-cluster env)"`). A missing cluster fails the test.
func clusterEnv(t *testing.T) map[string]string {
	t.Helper()
	keys := []string{"KUBECONFIG", "PHALANX_EXTENDER_URL"}
	env := map[string]string{}
	if dir := os.Getenv("PHALANX_TEST_CLUSTER_DIR"); dir != "" {
		data, err := os.ReadFile(filepath.Join(dir, "env"))
		if err != nil {
			t.Fatalf("no test cluster up in %s: %v", dir, err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok {
				env[k] = v
			}
		}
	} else {
		for _, k := range keys {
			env[k] = os.Getenv(k)
		}
	}
	for _, k := range keys {
		if env[k] == "" {
			t.Fatalf("%s unknown: set PHALANX_TEST_CLUSTER_DIR or eval \"$(scripts/test-cluster env)\"", k)
		}
	}
	return env
}

func newClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", clusterEnv(t)["KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// newNamespace creates a namespace for one test and deletes its pods afterwards. The namespace
// itself stays: without kube-controller-manager nothing would finish deleting it.
func newNamespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := client.CoreV1().Pods(ns.Name).DeleteCollection(context.Background(),
			metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
		if err != nil {
			t.Errorf("deleting pods of %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// newPod returns a single-container pod for schedulerName ("" is the default scheduler) that requests
// 1 CPU, 1Gi and, if gpus > 0, that many nvidia.com/gpu.
func newPod(name, schedulerName string, gpus int64, annotations map[string]string) *v1.Pod {
	requests := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}
	if gpus > 0 {
		requests["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: v1.PodSpec{
			SchedulerName: schedulerName,
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name:      "main",
				Image:     "phalanx.io/e2e:none",
				Resources: v1.ResourceRequirements{Requests: requests, Limits: requests},
			}},
		},
	}
}

func createPod(t *testing.T, client kubernetes.Interface, ns string, pod *v1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPod polls the pod every 100 ms until done(pod) holds and returns it with the time it was seen.
func waitPod(t *testing.T, client kubernetes.Interface, ns, name, what string, timeout time.Duration,
	done func(*v1.Pod) bool) (*v1.Pod, time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *v1.Pod
	for {
		pod, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			if done(pod) {
				return pod, time.Now()
			}
			last = pod
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s: not %s after %v (last error %v); status: %s; nodes: %s", ns, name, what, timeout, err,
				podStatus(last), nodesStatus(client))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func podStatus(pod *v1.Pod) string {
	if pod == nil {
		return "none"
	}
	s := fmt.Sprintf("phase=%s node=%q", pod.Status.Phase, pod.Spec.NodeName)
	for _, c := range pod.Status.Conditions {
		s += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Message)
	}
	return s
}

// nodesStatus describes every node: name, Ready, unschedulable and taints.
func nodesStatus(client kubernetes.Interface) string {
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, n := range list.Items {
		ready := "unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				ready = string(c.Status)
			}
		}
		s := fmt.Sprintf("%s(Ready=%s", n.Name, ready)
		if n.Spec.Unschedulable {
			s += " unschedulable"
		}
		for _, taint := range n.Spec.Taints {
			s += " " + taint.ToString()
		}
		out = append(out, s+")")
	}
	return strings.Join(out, " ")
}

func condition(pod *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == typ {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func isRunning(pod *v1.Pod) bool {
	c := condition(pod, v1.PodReady)
	return pod.Status.Phase == v1.PodRunning && c != nil && c.Status == v1.ConditionTrue
}

// kwokNodes lists the fake nodes that offer GPUs, sorted by name.
func kwokNodes(t *testing.T, client kubernetes.Interface) []v1.Node {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []v1.Node
	for _, n := range list.Items {
		if q, ok := n.Status.Allocatable["nvidia.com/gpu"]; ok && !q.IsZero() {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// addGPUNodes creates n kwok-managed nodes <prefix>-0.. offering gpus GPUs each, waits until kwok
// reports them Ready, and deletes them when the test ends: a test that depends on particular nodes
// owns them rather than sharing the cluster's base pool with the suites that ran before it.
func addGPUNodes(t *testing.T, client kubernetes.Interface, prefix string, n int, gpus int64) []string {
	t.Helper()
	res := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("64"),
		v1.ResourceMemory: resource.MustParse("512Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
		"nvidia.com/gpu":  *resource.NewQuantity(gpus, resource.DecimalSI),
	}
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name,
					"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			},
			Status: v1.NodeStatus{Capacity: res, Allocatable: res},
		}
		if _, err := client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", name, err)
		}
		names = append(names, name)
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, name := range names {
		for !nodeReady(client, name) {
			if time.Now().After(deadline) {
				t.Fatalf("node %s not Ready after 60 s", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return names
}

func nodeReady(client kubernetes.Interface, name string) bool {
	node, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
