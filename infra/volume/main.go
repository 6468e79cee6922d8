// storage-lab-volume: a modelled block volume for one local host (docs/storage-emulation.md).
//
// It serves one file, the volume's image, on a FUSE mount; the lab attaches a loop device with direct I/O to that
// file, makes ext4 on it and puts PostgreSQL's data there. The host keeps a real page cache and block semantics, and
// every I/O that reaches the volume passes this server, which times it by the device model (model.go), keeps the
// bytes in RAM or a file (store.go), and answers a control socket (control.go): statistics, the model on or off,
// new parameters, a power cut and power on, and shutdown.
//
// Usage:
//
//	storage-lab-volume --mount DIR --size BYTES --control SOCKET --params JSON [--backing FILE] [--model-off] [--power-cuts=false] [--serve loop|go-fuse]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

func main() {
	mount := flag.String("mount", "", "empty folder to mount the volume's FUSE file system on")
	size := flag.Int64("size", 0, "volume size in bytes (a multiple of 4096)")
	backing := flag.String("backing", "", "file holding the volume's bytes; empty: RAM")
	control := flag.String("control", "", "unix socket to answer control requests on")
	params := flag.String("params", "", "the device model's parameters (JSON, see model.go)")
	modelOff := flag.Bool("model-off", false, "start with the model off (I/O served uncapped)")
	volatileLimit := flag.Int64("volatile-limit", 512<<20, "bytes of writes not yet flushed that the server keeps undoable before it makes them durable early")
	maxWrite := flag.Int("max-write", 1<<20, "largest FUSE read or write request")
	pidFile := flag.String("pid-file", "", "file to write this server's pid to (removed on exit)")
	nice := flag.Int("nice", -20, "scheduling niceness of the server's threads: it keeps the model's time on a busy machine, as a device's own hardware would")
	powerCuts := flag.Bool("power-cuts", true, "keep the undo log of writes not yet flushed, so that a power cut drops them; false: every write is durable as it lands, and a cut is refused")
	compensate := flag.Bool("compensate", true, "take the path's measured overhead off the model's latency (control.go)")
	serveWith := flag.String("serve", "loop", "what answers /dev/fuse: loop (the server's own loop, loop.go) or go-fuse (go-fuse's server, a goroutine a request)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if *mount == "" || *size <= 0 || *control == "" || *params == "" {
		flag.Usage()
		os.Exit(2)
	}
	var p Params
	if err := json.Unmarshal([]byte(*params), &p); err != nil {
		log.Fatalf("--params: %v", err)
	}
	setTimerSlack()
	setNice(*nice)
	if stop := startCPUProfile(os.Getenv("STORAGE_LAB_VOLUME_PPROF")); stop != nil {
		defer stop()
	}

	store, err := OpenStore(*size, *backing, *volatileLimit, *powerCuts)
	if err != nil {
		log.Fatalf("volume store: %v", err)
	}
	model := NewModel(p)
	if *modelOff {
		model.SetOn(false)
	}
	if *serveWith != "loop" && *serveWith != "go-fuse" {
		log.Fatalf("--serve: loop or go-fuse, not %q", *serveWith)
	}
	fs := newVolumeFS(store, model)
	opts := mountOptions(*maxWrite)
	var server interface {
		unmounter
		Serve()
	}
	var err2 error
	if *serveWith == "loop" {
		server, err2 = mountLoop(fs, *mount, opts)
	} else {
		server, err2 = fuse.NewServer(fs, *mount, opts)
	}
	if err2 != nil {
		log.Fatalf("mounting %s: %v", *mount, err2)
	}
	spareProcs()
	ctl, err := listenControl(*control, fs, server, *mount, *maxWrite, *compensate)
	if err != nil {
		_ = server.Unmount()
		log.Fatalf("control socket %s: %v", *control, err)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-signals
		log.Printf("%v: unmounting", s)
		ctl.shutdown()
	}()
	log.Printf("serving %s/%s: %d bytes (%s), model %s %s, %s", *mount, ImageName, *size, store.Stats().Backing, p.Name, onOff(model.On()), *serveWith)
	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o600); err != nil {
			log.Printf("pid file %s: %v", *pidFile, err)
		}
		defer os.Remove(*pidFile)
	}
	fmt.Println("ready")
	server.Serve()
	ctl.close()
	store.Close()
	log.Printf("unmounted; exiting")
}

// mountOptions: how the volume's file system is mounted and what it tells the kernel at INIT.
func mountOptions(maxWrite int) *fuse.MountOptions {
	return &fuse.MountOptions{
		FsName:            "storage-lab-volume",
		Name:              "storage-lab-volume",
		DirectMountStrict: true, // there is no fusermount on these machines: root mounts directly
		MaxWrite:          maxWrite,
		// Asynchronous direct I/O (the loop device's) travels as background requests: the kernel must not hold
		// them back; the model's queue depth is the limit that applies.
		MaxBackground:       4096,
		CongestionThreshold: 4096,
		ExtraCapabilities:   fuse.CAP_ASYNC_DIO | fuse.CAP_PARALLEL_DIROPS,
		DisableXAttrs:       true,
		DisableReadDirPlus:  true,
		// Replies of 8 KiB go out in one writev: splicing them through a pipe costs more system calls than it saves.
		DisableSplice: true,
		AllowOther:    true,
	}
}

// spareProcs gives the Go scheduler more Ps than the threads the server keeps in blocking system calls (under
// --serve go-fuse; the server's own loop keeps one, in epoll_wait): go-fuse's readers (GOMAXPROCS of them at NewServer, at least 2, plus one) wait in read(2) on /dev/fuse and a reply's writev
// completes the I/O in the kernel. With every P in a system call and none idle, the runtime's monitor takes Ps back
// and hands them to other threads, polling every 20 µs, and each I/O's wake-up waited for a thread to be woken:
// at 3,000 IOPS on 2 cores that was about a third of the server's CPU (docs/storage-emulation.md, "What the device
// costs"). Spare Ps cost nothing while idle; the CPU the server can use stays the machine's. Called after
// fuse.NewServer, which sizes its readers by GOMAXPROCS.
func spareProcs() {
	procs := runtime.GOMAXPROCS(0)
	readers := min(max(procs, 2), 16) + 1
	runtime.GOMAXPROCS(max(procs, readers) + 5)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// setNice gives every thread of the server the niceness asked for; threads made later inherit it. A device's
// completions do not wait for the host's processes on real hardware: here the host's processes, and anything else on
// the machine, would otherwise delay them (the server uses a small share of a core).
func setNice(nice int) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, e := range entries {
		var tid int
		if _, err := fmt.Sscan(e.Name(), &tid); err == nil {
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
				log.Printf("niceness %d for thread %d: %v", nice, tid, err)
				return
			}
		}
	}
}

// setTimerSlack asks the kernel for precise wake-ups on every thread (its default lets a sleep overrun by 50 µs);
// threads made later inherit it from the thread that makes them.
func setTimerSlack() {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, e := range entries {
		_ = os.WriteFile("/proc/self/task/"+e.Name()+"/timerslack_ns", []byte("1"), 0)
	}
}

// startCPUProfile writes a Go CPU profile of the whole run to `file` (STORAGE_LAB_VOLUME_PPROF), to see where the
// server's CPU goes under load (go tool pprof); it returns the function that ends it, or nil when not asked for.
func startCPUProfile(file string) func() {
	if file == "" {
		return nil
	}
	f, err := os.Create(file)
	if err != nil {
		log.Printf("STORAGE_LAB_VOLUME_PPROF: %v", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Printf("STORAGE_LAB_VOLUME_PPROF: %v", err)
		f.Close()
		return nil
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
