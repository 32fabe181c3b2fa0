package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// helperEnv names the mode in which the test binary runs as the command of
// "redislock run" (see TestMain); the test sets it in redislock's
// environment, which passes it on.
const helperEnv = "REDISLOCK_TEST_HELPER"

// helper returns the environment and the command line for "run" to run
// the test binary in mode with args.
func helper(mode string, args ...string) (env, command []string) {
	return []string{helperEnv + "=" + mode}, append([]string{"--", os.Args[0]}, args...)
}

// helperMain is the test binary as a command. Every mode first prints
// "env KEY TOKEN FENCE" (FENCE "unset" when REDISLOCK_FENCE_TOKEN is not
// set), then:
//
//	exit CODE      exits with CODE
//	hold CODE      prints "ready", waits for a line (or EOF) on stdin, exits with CODE
//	sleep D        prints "ready", sleeps D, prints "done", exits 0
//	trap [FILE]    prints "ready", waits for SIGINT or SIGTERM, writes the time
//	               (Unix nanoseconds) to FILE if given, prints "got SIGNAL", exits 9
//	ignore         ignores SIGTERM, prints "ready", waits forever
//	heartbeat FILE ignores SIGTERM, prints "ready", then appends the time
//	               (Unix nanoseconds) to FILE every millisecond, forever
//	stamp FILE     writes the time (Unix nanoseconds) to FILE, exits 0
func helperMain(mode string, args []string) int {
	fence, ok := os.LookupEnv(envFenceToken)
	if !ok {
		fence = "unset"
	}
	fmt.Printf("env %s %s %s\n", os.Getenv(envKey), os.Getenv(envToken), fence)
	arg := ""
	if len(args) > 0 {
		arg = args[0]
	}
	switch mode {
	case "exit":
		code, _ := strconv.Atoi(arg)
		return code
	case "hold":
		code, _ := strconv.Atoi(arg)
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return code
	case "sleep":
		d, err := time.ParseDuration(arg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		time.Sleep(d) // the work that the lock protects
		fmt.Println("done")
		return 0
	case "trap":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		fmt.Println("ready")
		sig := <-sigs
		if arg != "" {
			if err := os.WriteFile(arg, fmt.Appendf(nil, "%d\n", time.Now().UnixNano()), 0o600); err != nil { //nolint:gosec // a file the test names
				fmt.Fprintln(os.Stderr, err)
			}
		}
		fmt.Printf("got %s\n", signalName(sig.(syscall.Signal)))
		return 9
	case "ignore":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour) // until SIGKILL
		return 1
	case "heartbeat":
		signal.Ignore(syscall.SIGTERM)
		f, err := os.OpenFile(arg, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) //nolint:gosec // a file the test names
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		for {
			// Each line is written whole, before the next tick: the last
			// line is the last moment the command was seen alive.
			if _, err := fmt.Fprintf(f, "%d\n", time.Now().UnixNano()); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			time.Sleep(time.Millisecond) // the pace of the heartbeat, not a synchronisation
		}
	case "stamp":
		if err := os.WriteFile(arg, fmt.Appendf(nil, "%d\n", time.Now().UnixNano()), 0o600); err != nil { //nolint:gosec // a file the test names
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 1
}
