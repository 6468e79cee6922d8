package main

// The control socket: one JSON request a line, one JSON answer a line (lib/volume.ts is the client).
//
//	{"op":"stats"}                         the counters, the model, and the loop device's own counters beside them
//	{"op":"model","on":false}              the model off (preparation runs uncapped) or on
//	{"op":"set","params":{...}}            new model parameters
//	{"op":"attach","device":"loop3"}       the loop device over the image: its counters are read beside the server's
//	{"op":"cut"}                           power cut: every I/O fails from now on, and unflushed writes are dropped
//	{"op":"power-on"}                      serve again, on what was durable at the cut
//	{"op":"shutdown"}                      unmount and exit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type request struct {
	Op     string  `json:"op"`
	On     *bool   `json:"on,omitempty"`
	Params *Params `json:"params,omitempty"`
	Device string  `json:"device,omitempty"`
}

// KernelCounters are a block device's own counts (/sys/block/<dev>/stat): completed I/Os and their time.
type KernelCounters struct {
	Reads        uint64 `json:"reads"`
	ReadSectors  uint64 `json:"readSectors"`
	ReadTicksMs  uint64 `json:"readTicksMs"`
	Writes       uint64 `json:"writes"`
	WriteSectors uint64 `json:"writeSectors"`
	WriteTicksMs uint64 `json:"writeTicksMs"`
	InFlight     uint64 `json:"inFlight"`
	Discards     uint64 `json:"discards"`
	Flushes      uint64 `json:"flushes"`
}

// Stats is the answer to "stats": cumulative counters, read at one moment.
type Stats struct {
	AtSeconds float64 `json:"atSeconds"` // monotonic clock
	Pid       int     `json:"pid"`
	Model     Params  `json:"model"`
	On        bool    `json:"on"`
	Dead      bool    `json:"dead"`

	Reads        uint64 `json:"reads"`
	Writes       uint64 `json:"writes"`
	Flushes      uint64 `json:"flushes"`
	Discards     uint64 `json:"discards"`
	ReadBytes    uint64 `json:"readBytes"`
	WriteBytes   uint64 `json:"writeBytes"`
	DiscardBytes uint64 `json:"discardBytes"`

	ModelledReads      uint64 `json:"modelledReads"`
	ModelledWrites     uint64 `json:"modelledWrites"`
	ModelledUnits      uint64 `json:"modelledUnits"`
	ModelledReadBytes  uint64 `json:"modelledReadBytes"`
	ModelledWriteBytes uint64 `json:"modelledWriteBytes"`
	ModelledAdmitted   uint64 `json:"modelledAdmitted"`

	ThrottleWaits       uint64  `json:"throttleWaits"`
	ThrottleWaitSeconds float64 `json:"throttleWaitSeconds"`
	QueueWaits          uint64  `json:"queueWaits"`
	QueueWaitSeconds    float64 `json:"queueWaitSeconds"`
	ReadServiceSeconds  float64 `json:"readServiceSeconds"`
	WriteServiceSeconds float64 `json:"writeServiceSeconds"`
	FlushServiceSeconds float64 `json:"flushServiceSeconds"`
	Errors              uint64  `json:"errors"`
	InFlight            int64   `json:"inFlight"`
	QueueArea           float64 `json:"queueArea"` // integral of I/Os in the server over time (I/O-seconds)
	BusiestSecondUnits  float64 `json:"busiestSecondUnits"`
	// What the server takes off the model's latency for the path's own overhead (observe, below).
	ReadCompensationUs  float64 `json:"readCompensationUs"`
	WriteCompensationUs float64 `json:"writeCompensationUs"`

	Store      StoreStats      `json:"store"`
	Device     string          `json:"device,omitempty"`
	Kernel     *KernelCounters `json:"kernel,omitempty"`
	RssBytes   uint64          `json:"rssBytes"`
	CPUSeconds float64         `json:"cpuSeconds"`
}

type controller struct {
	fs       *volumeFS
	server   unmounter
	mount    string
	maxWrite int
	listener net.Listener
	device   string
	devMu    sync.Mutex
	once     sync.Once
	stopped  chan struct{}
}

// unmounter is what serves the mount: the server's own loop, or go-fuse's server.
type unmounter interface{ Unmount() error }

func listenControl(path string, fs *volumeFS, server unmounter, mount string, maxWrite int, compensate bool) (*controller, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, err
	}
	c := &controller{fs: fs, server: server, mount: mount, maxWrite: maxWrite, listener: l, stopped: make(chan struct{})}
	go c.accept()
	if compensate {
		go c.observe()
	}
	return c, nil
}

func (c *controller) accept() {
	for {
		conn, err := c.listener.Accept()
		if err != nil {
			return
		}
		go c.serve(conn)
	}
}

func (c *controller) serve(conn net.Conn) {
	defer conn.Close()
	in := bufio.NewScanner(conn)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	out := json.NewEncoder(conn)
	for in.Scan() {
		var req request
		var answer map[string]any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			answer = map[string]any{"ok": false, "error": "not a JSON request: " + err.Error()}
		} else {
			answer = c.handle(req)
		}
		if err := out.Encode(answer); err != nil {
			return
		}
		if req.Op == "shutdown" {
			go c.shutdown()
			return
		}
	}
}

var loopName = regexp.MustCompile(`^loop[0-9]+$`)

func (c *controller) handle(req request) map[string]any {
	fail := func(format string, args ...any) map[string]any {
		return map[string]any{"ok": false, "error": fmt.Sprintf(format, args...)}
	}
	switch req.Op {
	case "stats":
		return map[string]any{"ok": true, "stats": c.stats()}
	case "model":
		if req.On == nil {
			return fail(`"model" needs "on": true or false`)
		}
		c.fs.model.SetOn(*req.On)
		log.Printf("model %s", onOff(*req.On))
		return map[string]any{"ok": true, "on": *req.On}
	case "set":
		if req.Params == nil {
			return fail(`"set" needs "params"`)
		}
		c.fs.model.Set(*req.Params)
		log.Printf("model parameters: %+v", *req.Params)
		return map[string]any{"ok": true}
	case "attach":
		if !loopName.MatchString(req.Device) {
			return fail("not a loop device name: %q", req.Device)
		}
		// Requests no larger than this server's largest FUSE request: the kernel never splits one block I/O into two
		// FUSE requests, so the device's count and this server's stay one for one.
		limit := fmt.Sprintf("%d", c.maxWrite>>10)
		if err := os.WriteFile("/sys/block/"+req.Device+"/queue/max_sectors_kb", []byte(limit), 0); err != nil {
			return fail("capping %s's requests at %s KiB: %v", req.Device, limit, err)
		}
		c.devMu.Lock()
		c.device = req.Device
		c.devMu.Unlock()
		log.Printf("observing /sys/block/%s (requests up to %s KiB)", req.Device, limit)
		return map[string]any{"ok": true}
	case "cut":
		if !c.fs.store.Undoable() {
			return fail("this volume keeps no undo log (started with --power-cuts=false): it cannot drop what was not flushed; only a power-cut drill's hosts can be cut")
		}
		started := time.Now()
		pages := c.fs.Cut()
		log.Printf("power cut: %d pages not flushed dropped (%.1f ms)", pages, float64(time.Since(started).Microseconds())/1e3)
		return map[string]any{"ok": true, "droppedPages": pages, "droppedBytes": pages * pageSize}
	case "power-on":
		c.fs.PowerOn()
		log.Printf("power on")
		return map[string]any{"ok": true}
	case "shutdown":
		return map[string]any{"ok": true}
	}
	return fail("unknown op %q", req.Op)
}

func (c *controller) attached() string {
	c.devMu.Lock()
	defer c.devMu.Unlock()
	return c.device
}

func (c *controller) stats() Stats {
	m := c.fs.model
	k := &m.C
	inflight, area := m.Queue()
	compRead, compWrite := m.Compensation()
	s := Stats{
		AtSeconds: float64(monotonicNs()) / 1e9,
		Pid:       os.Getpid(),
		Model:     m.Params(),
		On:        m.On(),
		Dead:      c.fs.Dead(),

		Reads: k.Reads.Load(), Writes: k.Writes.Load(), Flushes: k.Flushes.Load(), Discards: k.Discards.Load(),
		ReadBytes: k.ReadBytes.Load(), WriteBytes: k.WriteBytes.Load(), DiscardBytes: k.DiscardBytes.Load(),
		ModelledReads: k.ModelledReads.Load(), ModelledWrites: k.ModelledWrites.Load(), ModelledUnits: k.ModelledUnits.Load(),
		ModelledReadBytes: k.ModelledReadBytes.Load(), ModelledWriteBytes: k.ModelledWriteBytes.Load(), ModelledAdmitted: k.ModelledAdmitted.Load(),
		ThrottleWaits: k.ThrottleWaits.Load(), ThrottleWaitSeconds: float64(k.ThrottleWaitNs.Load()) / 1e9,
		QueueWaits: k.QueueWaits.Load(), QueueWaitSeconds: float64(k.QueueWaitNs.Load()) / 1e9,
		ReadServiceSeconds:  float64(k.ReadServiceNs.Load()) / 1e9,
		WriteServiceSeconds: float64(k.WriteServiceNs.Load()) / 1e9,
		FlushServiceSeconds: float64(k.FlushServiceNs.Load()) / 1e9,
		Errors:              k.Errors.Load(),
		InFlight:            inflight,
		QueueArea:           area,
		BusiestSecondUnits:  m.BusiestSecond(false),
		ReadCompensationUs:  float64(compRead) / 1e3,
		WriteCompensationUs: float64(compWrite) / 1e3,
		Store:               c.fs.store.Stats(),
	}
	if dev := c.attached(); dev != "" {
		s.Device = dev
		if kc, err := readKernelCounters(dev); err == nil {
			s.Kernel = &kc
		}
	}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		s.CPUSeconds = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	if statm, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(statm)); len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			s.RssBytes = pages * uint64(os.Getpagesize())
		}
	}
	return s
}

// readKernelCounters reads /sys/block/<dev>/stat (Documentation/block/stat.rst): 17 fields on kernels with
// discard and flush statistics. An empty flush counts as a write of no sectors there, and as a flush.
func readKernelCounters(dev string) (KernelCounters, error) {
	raw, err := os.ReadFile("/sys/block/" + dev + "/stat")
	if err != nil {
		return KernelCounters{}, err
	}
	f := strings.Fields(string(raw))
	if len(f) < 11 {
		return KernelCounters{}, errors.New("short stat line")
	}
	n := func(i int) uint64 {
		if i >= len(f) {
			return 0
		}
		v, _ := strconv.ParseUint(f[i], 10, 64)
		return v
	}
	return KernelCounters{Reads: n(0), ReadSectors: n(2), ReadTicksMs: n(3), Writes: n(4), WriteSectors: n(6), WriteTicksMs: n(7), InFlight: n(8), Discards: n(11), Flushes: n(15)}, nil
}

// observe keeps the block device's latency on the model once the loop device is known. The device's own counters
// (/sys/block/<dev>/stat) sum the time of every completed I/O, from the block layer's start to completion: all the
// path adds (the loop worker, the FUSE round trip, the server's wake-up) is in it. Over a window of reads (or writes)
// that all ran modelled without waiting for a token or a queue slot, their mean is compared with the model's latency
// and the server's compensation moves by 0.3 of the difference. Windows are long enough for the kernel's millisecond
// totals to give a precise mean.
func (c *controller) observe() {
	type point struct {
		kernel               KernelCounters
		reads, writes        uint64
		modelledR, modelledW uint64
		throttled, queued    uint64
	}
	read := func(dev string) (*point, bool) {
		kc, err := readKernelCounters(dev)
		if err != nil {
			return nil, false
		}
		k := &c.fs.model.C
		return &point{kernel: kc, reads: k.Reads.Load(), writes: k.Writes.Load(), modelledR: k.ModelledReads.Load(), modelledW: k.ModelledWrites.Load(), throttled: k.ThrottleWaits.Load(), queued: k.QueueWaits.Load()}, true
	}
	const minTicksMs, minIOs, gain = 100, 20, 0.3
	var fromR, fromW *point
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.stopped:
			return
		case <-tick.C:
		}
		dev := c.attached()
		if dev == "" {
			continue
		}
		now, ok := read(dev)
		if !ok {
			continue
		}
		if fromR == nil {
			fromR, fromW = now, now
			continue
		}
		clean := func(from *point) bool {
			return now.throttled == from.throttled && now.queued == from.queued
		}
		// Reads: every read of the window modelled, none held.
		if n, ticks := now.kernel.Reads-fromR.kernel.Reads, now.kernel.ReadTicksMs-fromR.kernel.ReadTicksMs; ticks >= minTicksMs && n >= minIOs {
			if clean(fromR) && now.modelledR-fromR.modelledR == now.reads-fromR.reads {
				c.fs.model.Compensate(kRead, float64(ticks)*1e6/float64(n), gain)
			}
			fromR = now
		} else if !clean(fromR) {
			fromR = now
		}
		if n, ticks := now.kernel.Writes-fromW.kernel.Writes, now.kernel.WriteTicksMs-fromW.kernel.WriteTicksMs; ticks >= minTicksMs && n >= minIOs {
			// Only windows without flushes: the kernel counts an empty flush as a write of its own, with its time.
			if clean(fromW) && now.modelledW-fromW.modelledW == now.writes-fromW.writes && now.kernel.Flushes == fromW.kernel.Flushes {
				c.fs.model.Compensate(kWrite, float64(ticks)*1e6/float64(n), gain)
			}
			fromW = now
		} else if !clean(fromW) {
			fromW = now
		}
	}
}

func (c *controller) close() {
	c.once.Do(func() { close(c.stopped) })
	_ = c.listener.Close()
}

// shutdown unmounts the file system (Serve then returns and main exits); a mount still in use (a loop device left
// attached) is detached lazily, so the server exits in bounded time whatever holds it.
func (c *controller) shutdown() {
	c.close()
	if err := c.server.Unmount(); err != nil {
		log.Printf("unmount: %v; detaching lazily", err)
		if err := syscall.Unmount(c.mount, syscall.MNT_DETACH); err != nil {
			log.Printf("lazy unmount: %v", err)
		}
	}
}
