// Command conformance-harness runs one scheduling cycle with upstream kube-scheduler's own
// framework and plugins (k8s.io/kubernetes v1.34, plus scheduler-plugins' Trimaran) over a
// `secsched score` snapshot, and prints per node what `secsched score --output json` prints:
// feasibility, the filter reason and every score plugin's raw, normalized and weighted score;
// and, for a pod with ResourceClaims to allocate, what DynamicResources would allocate on each
// feasible node (the request of each device, per claim).
//
// It is the reference side of tests/conformance: a thin program that only calls upstream
// packages. It is built by `secsched cluster build` inside the same Go wrapper module as the
// control-plane binaries, so it needs no extra module download.
//
// Two modes:
//
//	conformance-harness --config C.yaml --snapshot S.yaml --pod P.yaml [--profile NAME]
//	conformance-harness --cases -        # JSON lines on stdin: {id, config, profile, snapshot, pod}
//
// In the second mode every input line gives one output line {id, result} or {id, error}.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
	"sigs.k8s.io/yaml"

	pluginconfig "sigs.k8s.io/scheduler-plugins/apis/config"
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme" // Trimaran's args in kube-scheduler's scheme
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/loadvariationriskbalancing"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/lowriskovercommitment"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/targetloadpacking"
)

// caseInput is one cycle to run: the config's YAML text, the profile, the snapshot, the pod.
type caseInput struct {
	ID       string          `json:"id"`
	Config   string          `json:"config"`
	Profile  string          `json:"profile"`
	Snapshot snapshotInput   `json:"snapshot"`
	Pod      json.RawMessage `json:"pod"`
}

// snapshotInput is `secsched score`'s snapshot file.
type snapshotInput struct {
	Nodes             []json.RawMessage `json:"nodes"`
	Pods              []json.RawMessage `json:"pods"`
	Objects           []json.RawMessage `json:"objects"`
	Metrics           json.RawMessage   `json:"metrics"`
	RecentlyScheduled []recentInput     `json:"recentlyScheduled"`
	Now               float64           `json:"now"`
}

type recentInput struct {
	Pod       json.RawMessage `json:"pod"` // "NAMESPACE/NAME" of one of the pods, or a v1 Pod
	Timestamp float64         `json:"timestamp"`
}

// pluginScore, nodeReport and report are `secsched score --output json`'s shape.
type pluginScore struct {
	Score      int64 `json:"score"`
	Normalized int64 `json:"normalized"`
	Weight     int32 `json:"weight"`
}

type nodeReport struct {
	Feasible bool                   `json:"feasible"`
	Reason   *string                `json:"reason"`
	Plugins  map[string]pluginScore `json:"plugins"`
	Total    int64                  `json:"total"`
	// Devices: on a feasible node, what DynamicResources would allocate there (per claim to
	// allocate, the request each device was picked for, sorted); absent without such claims.
	Devices [][]string `json:"devices,omitempty"`
}

type report struct {
	Profile string                `json:"profile"`
	Pod     string                `json:"pod"`
	Nodes   map[string]nodeReport `json:"nodes"`
}

// metricsServer is a load-watcher service in this process: Trimaran's collector fetches the
// current case's metrics from it (its watcherAddress is pointed here), as from a real one.
type metricsServer struct {
	mu      sync.Mutex
	current []byte
	server  *httptest.Server
}

func newMetricsServer() *metricsServer {
	m := &metricsServer{}
	m.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		m.mu.Lock()
		body := m.current
		m.mu.Unlock()
		if len(body) == 0 {
			http.Error(w, "no metrics in this snapshot", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	return m
}

func (m *metricsServer) set(body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if string(body) == "null" {
		body = nil
	}
	m.current = body
}

// decodedConfigs caches each config text's decoded profiles (decoding runs defaulting).
var decodedConfigs = map[string]*config.KubeSchedulerConfiguration{}

// loadConfig decodes a KubeSchedulerConfiguration with kube-scheduler's own scheme, as
// kube-scheduler's --config does: defaults, default plugins merged, default plugin args.
func loadConfig(text string, watcherAddress string) (*config.KubeSchedulerConfiguration, error) {
	if cfg, ok := decodedConfigs[text]; ok {
		return cfg, nil
	}
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode([]byte(text), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("config: not a KubeSchedulerConfiguration but %s", gvk)
	}
	// Trimaran reads metrics from the snapshot, served by the in-process load-watcher.
	for p := range cfg.Profiles {
		for _, pc := range cfg.Profiles[p].PluginConfig {
			switch args := pc.Args.(type) {
			case *pluginconfig.TargetLoadPackingArgs:
				args.WatcherAddress = watcherAddress
			case *pluginconfig.LoadVariationRiskBalancingArgs:
				args.WatcherAddress = watcherAddress
			case *pluginconfig.LowRiskOverCommitmentArgs:
				args.WatcherAddress = watcherAddress
			}
		}
	}
	decodedConfigs[text] = cfg
	return cfg, nil
}

func pickProfile(cfg *config.KubeSchedulerConfiguration, name string) (*config.KubeSchedulerProfile, error) {
	if len(cfg.Profiles) == 0 {
		return nil, errors.New("config: no profiles")
	}
	if name == "" {
		return &cfg.Profiles[0], nil
	}
	for i := range cfg.Profiles {
		if cfg.Profiles[i].SchedulerName == name {
			return &cfg.Profiles[i], nil
		}
	}
	return nil, fmt.Errorf("config: no profile has schedulerName %q", name)
}

// trimaranFactories are the load-aware plugins; they get their own (never started) informer
// factory so that their "recently scheduled pods" come from the snapshot's recentlyScheduled,
// with its timestamps, instead of from every bound pod at the harness's wall-clock time.
var trimaranFactories = map[string]frameworkruntime.PluginFactory{
	targetloadpacking.Name:          targetloadpacking.New,
	loadvariationriskbalancing.Name: loadvariationriskbalancing.New,
	lowriskovercommitment.Name:      lowriskovercommitment.New,
}

// isolatedHandle is the framework's handle with a private informer factory.
type isolatedHandle struct {
	framework.Handle
	factory informers.SharedInformerFactory
}

func (h isolatedHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }

// registry is the in-tree registry plus Trimaran, every factory wrapped so that the plugin
// instances it builds are kept (to ask each score plugin for its raw score).
func registry(built map[string]framework.Plugin) frameworkruntime.Registry {
	base := frameworkplugins.NewInTreeRegistry()
	for name, factory := range trimaranFactories {
		factory := factory
		base[name] = func(ctx context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
			private := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
			return factory(ctx, args, isolatedHandle{Handle: h, factory: private})
		}
	}
	wrapped := frameworkruntime.Registry{}
	for name, factory := range base {
		name, factory := name, factory
		wrapped[name] = func(ctx context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
			p, err := factory(ctx, args, h)
			if err == nil {
				built[name] = p
			}
			return p, err
		}
	}
	return wrapped
}

// setRecentlyScheduled replaces a Trimaran plugin's scheduled-pods cache with the snapshot's
// recentlyScheduled entries (the cache is what its informer handler would have recorded).
func setRecentlyScheduled(p framework.Plugin, recent map[string][]recentPod) {
	value := reflect.ValueOf(p)
	if value.Kind() != reflect.Pointer || value.Elem().Kind() != reflect.Struct {
		return
	}
	field := value.Elem().FieldByName("eventHandler")
	if !field.IsValid() {
		return
	}
	handler, ok := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface().(*trimaran.PodAssignEventHandler)
	if !ok || handler == nil {
		return
	}
	handler.Lock()
	defer handler.Unlock()
	cache := reflect.ValueOf(handler).Elem().FieldByName("ScheduledPodsCache")
	fresh := reflect.MakeMap(cache.Type())
	for node, pods := range recent {
		entries := reflect.MakeSlice(cache.Type().Elem(), 0, len(pods))
		for _, rp := range pods {
			entry := reflect.New(cache.Type().Elem().Elem()).Elem()
			entry.FieldByName("Timestamp").Set(reflect.ValueOf(rp.at))
			entry.FieldByName("Pod").Set(reflect.ValueOf(rp.pod))
			entries = reflect.Append(entries, entry)
		}
		fresh.SetMapIndex(reflect.ValueOf(node), entries)
	}
	cache.Set(fresh)
}

type recentPod struct {
	pod *v1.Pod
	at  time.Time
}

func decodePod(raw json.RawMessage) (*v1.Pod, error) {
	pod := &v1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if pod.UID == "" {
		pod.UID = types.UID(pod.Namespace + "/" + pod.Name)
	}
	return pod, nil
}

// run schedules the case's pod into its snapshot with upstream's framework and reports it.
func run(in *caseInput, metrics *metricsServer) (*report, error) {
	cfg, err := loadConfig(in.Config, metrics.server.URL)
	if err != nil {
		return nil, err
	}
	profile, err := pickProfile(cfg, in.Profile)
	if err != nil {
		return nil, err
	}
	pod, err := decodePod(in.Pod)
	if err != nil {
		return nil, err
	}
	var nodes []*v1.Node
	var objects []runtime.Object
	for i, raw := range in.Snapshot.Nodes {
		node := &v1.Node{}
		if err := json.Unmarshal(raw, node); err != nil {
			return nil, fmt.Errorf("nodes[%d]: %w", i, err)
		}
		nodes = append(nodes, node)
		objects = append(objects, node)
	}
	var pods []*v1.Pod
	byKey := map[string]*v1.Pod{}
	for i, raw := range in.Snapshot.Pods {
		p, err := decodePod(raw)
		if err != nil {
			return nil, fmt.Errorf("pods[%d]: %w", i, err)
		}
		pods = append(pods, p)
		objects = append(objects, p)
		byKey[p.Namespace+"/"+p.Name] = p
	}
	decoder := clientscheme.Codecs.UniversalDeserializer()
	for i, raw := range in.Snapshot.Objects {
		obj, _, err := decoder.Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("objects[%d]: %w", i, err)
		}
		objects = append(objects, obj)
	}
	recent := map[string][]recentPod{}
	for i, entry := range in.Snapshot.RecentlyScheduled {
		var key string
		var p *v1.Pod
		if json.Unmarshal(entry.Pod, &key) == nil {
			if p = byKey[key]; p == nil {
				p = byKey["default/"+key]
			}
			if p == nil {
				return nil, fmt.Errorf("recentlyScheduled[%d]: %q is not one of the pods", i, key)
			}
		} else if p, err = decodePod(entry.Pod); err != nil {
			return nil, fmt.Errorf("recentlyScheduled[%d]: %w", i, err)
		}
		seconds := int64(entry.Timestamp)
		at := time.Unix(seconds, int64((entry.Timestamp-float64(seconds))*1e9))
		recent[p.Spec.NodeName] = append(recent[p.Spec.NodeName], recentPod{pod: p, at: at})
	}
	metrics.set(in.Snapshot.Metrics)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := klog.FromContext(ctx)
	client := fake.NewSimpleClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	claims := assumecache.NewAssumeCache(logger, factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	trackerOpts := tracker.Options{
		EnableDeviceTaints:       feature.DefaultFeatureGate.Enabled(features.DRADeviceTaints),
		EnableConsumableCapacity: feature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if trackerOpts.EnableDeviceTaints {
		trackerOpts.TaintInformer = factory.Resource().V1alpha3().DeviceTaintRules()
		trackerOpts.ClassInformer = factory.Resource().V1().DeviceClasses()
	}
	slices, err := tracker.StartTracker(ctx, trackerOpts)
	if err != nil {
		return nil, fmt.Errorf("resource slice tracker: %w", err)
	}
	snapshot := internalcache.NewSnapshot(pods, nodes)
	built := map[string]framework.Plugin{}
	draManager := dynamicresources.NewDRAManager(ctx, claims, slices, factory)
	f, err := frameworkruntime.NewFramework(ctx, registry(built), profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSharedDRAManager(draManager),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithEventRecorder(events.NewFakeRecorder(100)),
		frameworkruntime.WithParallelism(1),
	)
	if err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	// The informers' stores are synced; the slice tracker, the claims' assume cache and the
	// allocated-devices index behind it are fed by their event handlers a moment later.
	wantClaims, wantDevices := claimsAndAllocatedDevices(objects)
	if !cache.WaitForCacheSync(ctx.Done(), slices.HasSynced, func() bool {
		if len(claims.List(nil)) < wantClaims {
			return false
		}
		allocated, err := draManager.ResourceClaims().ListAllAllocatedDevices()
		return err == nil && allocated.Len() >= wantDevices
	}) {
		return nil, errors.New("DRA caches did not sync")
	}
	for _, p := range built {
		setRecentlyScheduled(p, recent)
	}
	return cycle(ctx, f, built, snapshot, pod)
}

// claimsAndAllocatedDevices counts the snapshot's ResourceClaims and the distinct devices their
// allocations hold (what the DRA manager must have seen before the cycle runs).
func claimsAndAllocatedDevices(objects []runtime.Object) (int, int) {
	claims := 0
	devices := sets.New[string]()
	for _, obj := range objects {
		claim, ok := obj.(*resourceapi.ResourceClaim)
		if !ok {
			continue
		}
		claims++
		if claim.Status.Allocation == nil {
			continue
		}
		for _, result := range claim.Status.Allocation.Devices.Results {
			if result.AdminAccess == nil || !*result.AdminAccess {
				devices.Insert(result.Driver + "/" + result.Pool + "/" + result.Device)
			}
		}
	}
	return claims, devices.Len()
}

// cycle is schedule_one.go's findNodesThatFitPod and prioritizeNodes for every node (no
// percentageOfNodesToScore cut, no nominated pods, no extenders), keeping every score.
func cycle(ctx context.Context, f framework.Framework, built map[string]framework.Plugin, snapshot *internalcache.Snapshot, pod *v1.Pod) (*report, error) {
	state := framework.NewCycleState()
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	all, err := snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	out := &report{Profile: f.ProfileName(), Pod: pod.Namespace + "/" + pod.Name, Nodes: map[string]nodeReport{}}
	rejected := func(name string, s *fwk.Status) {
		reason := s.Message()
		out.Nodes[name] = nodeReport{Feasible: false, Reason: &reason, Plugins: map[string]pluginScore{}}
	}
	preRes, s, unschedulablePlugins := f.RunPreFilterPlugins(ctx, state, pod)
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return nil, s.AsError()
		}
		for _, ni := range all {
			rejected(ni.Node().Name, s)
		}
		return out, nil
	}
	candidates := all
	if !preRes.AllNodes() {
		candidates = nil
		absent := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulablePlugins)))
		for _, ni := range all {
			if preRes.NodeNames.Has(ni.Node().Name) {
				candidates = append(candidates, ni)
			} else {
				rejected(ni.Node().Name, absent)
			}
		}
	}
	var feasible []fwk.NodeInfo
	for _, ni := range candidates {
		status := f.RunFilterPlugins(ctx, state, pod, ni)
		if status.Code() == fwk.Error {
			return nil, status.AsError()
		}
		if status.IsSuccess() {
			feasible = append(feasible, ni)
		} else {
			rejected(ni.Node().Name, status)
		}
	}
	if len(feasible) == 0 {
		return out, nil
	}
	devices := draDevices(state)
	if !f.HasScorePlugins() {
		// prioritizeNodes: with no score plugins every node scores 1.
		for _, ni := range feasible {
			name := ni.Node().Name
			out.Nodes[name] = nodeReport{Feasible: true, Plugins: map[string]pluginScore{}, Total: 1, Devices: devices[name]}
		}
		return out, nil
	}
	if s := f.RunPreScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() {
		return nil, s.AsError()
	}
	scores, s := f.RunScorePlugins(ctx, state, pod, feasible)
	if !s.IsSuccess() {
		return nil, s.AsError()
	}
	weights := map[string]int32{}
	var order []string
	for _, p := range f.ListPlugins().Score.Enabled {
		weights[p.Name] = p.Weight
		order = append(order, p.Name)
	}
	skipped := state.GetSkipScorePlugins()
	for i, ni := range feasible {
		name := ni.Node().Name
		weighted := map[string]int64{}
		for _, ps := range scores[i].Scores {
			weighted[ps.Name] = ps.Score
		}
		plugins := map[string]pluginScore{}
		for _, pl := range order {
			weight := weights[pl]
			if skipped.Has(pl) {
				plugins[pl] = pluginScore{Weight: weight}
				continue
			}
			scorer, ok := built[pl].(framework.ScorePlugin)
			if !ok {
				return nil, fmt.Errorf("score plugin %q was not built", pl)
			}
			raw, rs := scorer.Score(ctx, state, pod, ni)
			if !rs.IsSuccess() {
				return nil, rs.AsError()
			}
			plugins[pl] = pluginScore{Score: raw, Normalized: weighted[pl] / int64(weight), Weight: weight}
		}
		out.Nodes[name] = nodeReport{Feasible: true, Plugins: plugins, Total: scores[i].TotalScore, Devices: devices[name]}
	}
	return out, nil
}

// draDevices reads what DynamicResources' Filter cached per node for Reserve (its private
// stateData.nodeAllocations, read by reflection): per claim to allocate, the request of each
// device the claim gets there, sorted. Nil when the pod has no claim to allocate.
func draDevices(state fwk.CycleState) map[string][][]string {
	data, err := state.Read(fwk.StateKey(dynamicresources.Name))
	if err != nil || data == nil {
		return nil
	}
	value := reflect.ValueOf(data)
	if value.Kind() != reflect.Pointer || value.Elem().Kind() != reflect.Struct {
		return nil
	}
	allocations := value.Elem().FieldByName("nodeAllocations")
	if !allocations.IsValid() || allocations.Kind() != reflect.Map {
		return nil
	}
	out := map[string][][]string{}
	entries := allocations.MapRange()
	for entries.Next() {
		results := entries.Value().FieldByName("allocationResults")
		claims := [][]string{}
		for i := 0; i < results.Len(); i++ {
			picked := results.Index(i).FieldByName("Devices").FieldByName("Results")
			requests := []string{}
			for j := 0; j < picked.Len(); j++ {
				requests = append(requests, picked.Index(j).FieldByName("Request").String())
			}
			sort.Strings(requests)
			claims = append(claims, requests)
		}
		out[entries.Key().String()] = claims
	}
	return out
}

func readYAMLAsJSON(path string) (json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	converted, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return converted, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}

func main() {
	configPath := flag.String("config", "", "KubeSchedulerConfiguration file")
	snapshotPath := flag.String("snapshot", "", "`secsched score` snapshot file (YAML or JSON)")
	podPath := flag.String("pod", "", "the v1 Pod to place (YAML or JSON)")
	profileName := flag.String("profile", "", "schedulerName of the profile (default: the first)")
	cases := flag.String("cases", "", "read JSON-lines cases from this file ('-': stdin)")
	flag.Parse()
	// Plugins log what they decide (Trimaran: "Unable to find metrics for node"); the report
	// says it all, and a clean stderr keeps errors readable.
	klog.SetLogger(logr.Discard())

	schedmetrics.Register() // the framework records into these; unregistered they are nil
	metrics := newMetricsServer()
	defer metrics.server.Close()

	if *cases == "" {
		if *configPath == "" || *snapshotPath == "" || *podPath == "" {
			fail(errors.New("give --config, --snapshot and --pod, or --cases"))
		}
		text, err := os.ReadFile(*configPath)
		if err != nil {
			fail(err)
		}
		in := &caseInput{Config: string(text), Profile: *profileName}
		snapshotJSON, err := readYAMLAsJSON(*snapshotPath)
		if err != nil {
			fail(err)
		}
		if err := json.Unmarshal(snapshotJSON, &in.Snapshot); err != nil {
			fail(fmt.Errorf("%s: %w", *snapshotPath, err))
		}
		if in.Pod, err = readYAMLAsJSON(*podPath); err != nil {
			fail(err)
		}
		out, err := run(in, metrics)
		if err != nil {
			fail(err)
		}
		encoded, _ := json.MarshalIndent(out, "", "  ")
		fmt.Println(string(encoded))
		return
	}

	source := os.Stdin
	if *cases != "-" {
		file, err := os.Open(*cases)
		if err != nil {
			fail(err)
		}
		defer file.Close()
		source = file
	}
	reader := bufio.NewReaderSize(source, 1<<20)
	writer := bufio.NewWriter(os.Stdout)
	defer writer.Flush()
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 {
			answer := map[string]any{}
			in := &caseInput{}
			if uerr := json.Unmarshal(line, in); uerr != nil {
				answer["error"] = uerr.Error()
			} else {
				answer["id"] = in.ID
				if out, rerr := run(in, metrics); rerr != nil {
					answer["error"] = rerr.Error()
				} else {
					answer["result"] = out
				}
			}
			encoded, _ := json.Marshal(answer)
			_, _ = writer.Write(append(encoded, '\n'))
			_ = writer.Flush()
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			fail(err)
		}
	}
}
