// E2e: pods created through the real kube-apiserver are bound by the real kube-scheduler (default
// profile), run on kwok nodes, complete after phalanx.io/sim-duration, and go away when deleted.
package cluster_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestControlPlaneVersion(t *testing.T) {
	client := newClient(t)
	info, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if want := pinnedVersion(t, "tools/k8s/go.mod", "k8s.io/kubernetes"); info.GitVersion != want {
		t.Fatalf("kube-apiserver reports %q, pinned %q", info.GitVersion, want)
	}
	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "phalanx-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kube-scheduler holds no phalanx-scheduler lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatal("phalanx-scheduler lease has no holder")
	}
}

func TestDefaultSchedulerRunsAndCompletesPods(t *testing.T) {
	client := newClient(t)
	ns := newNamespace(t, client)
	nodes := map[string]bool{}
	for _, n := range kwokNodes(t, client) {
		nodes[n.Name] = true
	}
	if len(nodes) == 0 {
		t.Fatal("no kwok nodes")
	}

	const simSeconds = 3
	createPod(t, client, ns, newPod("forever", "", 0, nil))
	createPod(t, client, ns, newPod("finite", "", 0, map[string]string{"phalanx.io/sim-duration": strconv.Itoa(simSeconds)}))

	for _, name := range []string{"forever", "finite"} {
		pod, _ := waitPod(t, client, ns, name, "bound", 30*time.Second, func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
		if !nodes[pod.Spec.NodeName] {
			t.Errorf("%s bound to %q, not a kwok node", name, pod.Spec.NodeName)
		}
		if pod.Spec.SchedulerName != v1.DefaultSchedulerName {
			t.Errorf("%s has schedulerName %q", name, pod.Spec.SchedulerName)
		}
		waitPod(t, client, ns, name, "Running", 30*time.Second, isRunning)
	}
	assertScheduledBy(t, client, ns, "forever", v1.DefaultSchedulerName)

	finite, seen := waitPod(t, client, ns, "finite", "Succeeded", 30*time.Second,
		func(p *v1.Pod) bool { return p.Status.Phase != v1.PodRunning })
	if finite.Status.Phase != v1.PodSucceeded {
		t.Fatalf("finite ended in phase %s", finite.Status.Phase)
	}
	if finite.Status.StartTime == nil {
		t.Fatal("finite has no startTime")
	}
	ran := seen.Sub(finite.Status.StartTime.Time)
	t.Logf("finite: Succeeded seen %v after its startTime", ran)
	if ran < simSeconds*time.Second || ran > (simSeconds+10)*time.Second {
		t.Errorf("finite seen Succeeded %v after its startTime, want %ds (+ up to 10s of latency)", ran, simSeconds)
	}
	for _, cs := range finite.Status.ContainerStatuses {
		if cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" || cs.State.Terminated.ExitCode != 0 {
			t.Errorf("container %s not terminated with Completed/0: %+v", cs.Name, cs.State)
		}
	}

	// Without the annotation a pod keeps running; deleting it removes it (kwok's pod-delete stage).
	waitPod(t, client, ns, "forever", "still Running", time.Second, isRunning)
	if err := client.CoreV1().Pods(ns).Delete(context.Background(), "forever", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := client.CoreV1().Pods(ns).Get(context.Background(), "forever", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleted pod forever still present after 30s (err %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertScheduledBy waits for the pod's Scheduled event, which kube-scheduler reports under the
// name of the profile that placed the pod.
func assertScheduledBy(t *testing.T, client kubernetes.Interface, ns, pod, scheduler string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		events, err := client.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Regarding.Name == pod && e.Reason == "Scheduled" && e.ReportingController == scheduler {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Scheduled event from %q for pod %s/%s", scheduler, ns, pod)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
