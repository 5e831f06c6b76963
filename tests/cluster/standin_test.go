package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(node string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
			{Name: "web", Image: "nginxdemos/hello:0.3-plain-text"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestNextStep(t *testing.T) {
	now := metav1.Now()
	ready := func(p *corev1.Pod) { p.Status = runningStatus(p, now) }
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &now }
	cases := []struct {
		name string
		pod  *corev1.Pod
		want step
	}{
		{"unscheduled pods are bound", pod("", nil), stepBind},
		{"bound pods are marked ready", pod(standInNodeName, nil), stepMarkReady},
		{"ready pods are left alone", pod(standInNodeName, ready), stepNone},
		{"pods on other nodes are not ours", pod("elsewhere", nil), stepNone},
		{"deleted pods are removed", pod(standInNodeName, deleting), stepRemove},
		{"deleted unscheduled pods are removed", pod("", deleting), stepRemove},
		{"deleted pods on other nodes are not ours", pod("elsewhere", deleting), stepNone},
		{"a pod that lost readiness is marked ready again", pod(standInNodeName, func(p *corev1.Pod) {
			ready(p)
			p.Status.Conditions[3].Status = corev1.ConditionFalse
		}), stepMarkReady},
	}
	for _, c := range cases {
		if got := nextStep(c.pod, standInNodeName); got != c.want {
			t.Errorf("%s: got step %d, want %d", c.name, got, c.want)
		}
	}
}

func TestRunningStatusIsReadyForEveryContainer(t *testing.T) {
	now := metav1.Now()
	p := pod(standInNodeName, func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
		p.Status.QOSClass = corev1.PodQOSBestEffort
	})
	status := runningStatus(p, now)
	if status.Phase != corev1.PodRunning || !isReady(&corev1.Pod{Status: status}) {
		t.Fatalf("not running and ready: %+v", status)
	}
	if len(status.ContainerStatuses) != 2 || status.ContainerStatuses[1].Name != "sidecar" || !status.ContainerStatuses[1].Ready {
		t.Fatalf("container statuses: %+v", status.ContainerStatuses)
	}
	if len(status.InitContainerStatuses) != 1 || status.InitContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("init containers should have completed: %+v", status.InitContainerStatuses)
	}
	if status.QOSClass != corev1.PodQOSBestEffort {
		t.Fatalf("what the API server set is kept: %q", status.QOSClass)
	}
	if status.PodIP != "" {
		t.Fatalf("no container runs, so no pod IP: %q", status.PodIP)
	}
}
