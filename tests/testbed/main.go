// Command testbed brings the local test bed up and down for people and for
// `make demo`: go run ./tests/testbed up|down|status.
//
// Today the test bed is the SSH test hosts (tests/testhosts); the Kubernetes
// control plane, registry and Flux parts join it as they are built.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gitops-k3s-flux/k3s_flux/tests/testhosts"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	name := fs.String("name", testhosts.DefaultName, "test bed name (prefix of namespaces and interfaces)")
	dir := fs.String("dir", "", "state directory (default $TMPDIR/<name>-testbed)")
	subnet := fs.String("subnet", testhosts.DefaultSubnet, "first three octets of the hosts' /24")
	controllers := fs.Int("controllers", 1, "number of controller hosts")
	workers := fs.Int("workers", 2, "number of worker hosts")
	_ = fs.Parse(os.Args[2:])
	if *dir == "" {
		*dir = filepath.Join(os.TempDir(), *name+"-testbed")
	}

	switch os.Args[1] {
	case "up":
		bed, err := testhosts.Up(testhosts.Options{Name: *name, Dir: *dir, Subnet: *subnet, Controllers: *controllers, Workers: *workers})
		if err != nil {
			fail(err)
		}
		status(bed)
	case "down":
		if err := testhosts.Down(*name, *dir); err != nil {
			fail(err)
		}
		fmt.Fprintf(os.Stderr, "test bed %s is down\n", *name)
	case "status":
		bed, err := testhosts.Load(*dir)
		if err != nil {
			fail(fmt.Errorf("test bed %s is not up: %w", *name, err))
		}
		status(bed)
	default:
		usage()
	}
}

func status(bed *testhosts.Bed) {
	fmt.Printf("inventory: %s\n", bed.Inventory)
	for _, h := range bed.Hosts {
		fmt.Printf("  %-8s %-16s %-16s sshd pid %d\n", h.Name, h.Group, h.Addr, h.PID)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testbed up|down|status [-name k3sf] [-controllers 1] [-workers 2] [-subnet 10.213.0] [-dir DIR]")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testbed:", err)
	os.Exit(1)
}
