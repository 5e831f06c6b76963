package main

// The kubelet stand-in: the least a node does for Deployments to report
// ready and available replicas. It binds every unscheduled pod to one Node,
// marks it Running and Ready, and removes a pod being deleted. No container
// ever runs: no image is pulled, no process started, no probe run, and a
// pod's IP is never set. Nothing else a kubelet does happens here.

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const standInNodeName = "metahook-standin"

type standIn struct {
	client kubernetes.Interface
	node   string
	queue  workqueue.TypedRateLimitingInterface[cache.ObjectName]
}

func newStandIn(config *rest.Config, node string) (*standIn, error) {
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = 200, 400
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &standIn{
		client: client,
		node:   node,
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()),
	}, nil
}

// runningStandIn is a stand-in at work, which can be stopped (and a new
// one started: what the control endpoint does after an API server restart).
type runningStandIn struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startStandIn(parent context.Context, kubeconfig string) (*runningStandIn, error) {
	config, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	s, err := newStandIn(config, standInNodeName)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	running := &runningStandIn{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(running.done)
		s.run(ctx)
	}()
	return running, nil
}

// stop ends the stand-in's work and returns once its informers are gone.
func (r *runningStandIn) stop() {
	r.cancel()
	<-r.done
}

// run works until ctx ends; it survives the API server going away and
// coming back (the informer relists, failed pods are retried).
func (s *standIn) run(ctx context.Context) {
	defer s.queue.ShutDown()
	for ctx.Err() == nil {
		if err := ensureNode(ctx, s.client, s.node); err == nil {
			break
		} else {
			klog.ErrorS(err, "registering the stand-in node; retrying")
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	factory := informers.NewSharedInformerFactory(s.client, 0)
	pods := factory.Core().V1().Pods()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingObjectToName(obj); err == nil {
			s.queue.Add(key)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		klog.ErrorS(err, "watching pods")
		return
	}
	lister := pods.Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for i := 0; i < 4; i++ {
		go func() {
			for s.next(ctx, lister) {
			}
		}()
	}
	<-ctx.Done()
}

func (s *standIn) next(ctx context.Context, lister listers.PodLister) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	pod, err := lister.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		s.queue.Forget(key)
		return true
	}
	if err == nil {
		err = s.handle(ctx, pod)
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		klog.V(2).InfoS("pod not handled yet; retrying", "pod", key, "err", err)
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

// handle does the one step a pod needs next.
func (s *standIn) handle(ctx context.Context, pod *corev1.Pod) error {
	pods := s.client.CoreV1().Pods(pod.Namespace)
	switch next := nextStep(pod, s.node); next {
	case stepRemove:
		// What a kubelet does once a pod's containers have stopped.
		zero := int64(0)
		return pods.Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
	case stepBind:
		return pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: s.node},
		}, metav1.CreateOptions{})
	case stepMarkReady:
		updated := pod.DeepCopy()
		updated.Status = runningStatus(pod, metav1.Now())
		_, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	case stepNone:
		return nil
	default:
		return fmt.Errorf("unknown step %d", next)
	}
}

type step int

const (
	stepNone step = iota
	stepRemove
	stepBind
	stepMarkReady
)

// nextStep decides what the stand-in does to pod, as node.
func nextStep(pod *corev1.Pod, node string) step {
	switch {
	case pod.DeletionTimestamp != nil:
		if pod.Spec.NodeName == "" || pod.Spec.NodeName == node {
			return stepRemove
		}
		return stepNone
	case pod.Spec.NodeName == "":
		return stepBind
	case pod.Spec.NodeName != node:
		return stepNone
	case pod.Status.Phase == corev1.PodRunning && isReady(pod):
		return stepNone
	default:
		return stepMarkReady
	}
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runningStatus is the status a kubelet would report once every container
// started and passed its readiness checks.
func runningStatus(pod *corev1.Pod, now metav1.Time) corev1.PodStatus {
	status := *pod.Status.DeepCopy()
	status.Phase = corev1.PodRunning
	status.HostIP = "127.0.0.1"
	status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	conditions := []corev1.PodConditionType{
		corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled,
	}
	status.Conditions = nil
	for _, t := range conditions {
		status.Conditions = append(status.Conditions, corev1.PodCondition{
			Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now,
		})
	}
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, containerStatus(c, true,
			corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}))
	}
	status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		status.InitContainerStatuses = append(status.InitContainerStatuses, containerStatus(c, false,
			corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}))
	}
	return status
}

// containerStatus is a ready container of the stand-in in `state`.
func containerStatus(c corev1.Container, started bool, state corev1.ContainerState) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name:    c.Name,
		Image:   c.Image,
		ImageID: "metahook-standin://" + c.Image,
		Ready:   true,
		Started: &started,
		State:   state,
	}
}

// nodeStatus is a healthy node with room for every pod a test makes.
func nodeStatus(now metav1.Time) corev1.NodeStatus {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("10000"),
	}
	return corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "metahook's kubelet stand-in (no container ever runs)", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: standInNodeName}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "metahook-standin", OperatingSystem: "linux", Architecture: "amd64"},
	}
}

// ensureNode registers the stand-in's Node, Ready, so that pods bound to it
// look scheduled onto a healthy node.
func ensureNode(ctx context.Context, client kubernetes.Interface, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	current, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	current.Status = nodeStatus(now)
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{})
	return err
}
