package bed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// S3 is a real S3-compatible server (versitygw, its posix backend) on the
// test network, for k3s's etcd-s3 snapshots: each bucket is a directory
// under Root, each object a file in it, so a test reads what k3s uploaded
// there directly.
type S3 struct {
	Endpoint  string // host:port, as k3s's etcd-s3-endpoint takes it (plain http: etcd-s3-insecure)
	Region    string
	Bucket    string
	AccessKey string
	SecretKey string
	Root      string
	proc      *Process
}

func startS3(ctx context.Context, dir, addr string) (*S3, error) {
	bin, err := binary("versitygw", "VERSITYGW_VERSION")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &S3{Endpoint: net.JoinHostPort(addr, strconv.Itoa(port)), Region: "us-east-1", Bucket: "k3s-snapshots",
		AccessKey: "BEDS3" + randomHex(8), SecretKey: "bed-s3-secret-" + randomHex(12), Root: filepath.Join(dir, "root")}
	if err := os.MkdirAll(filepath.Join(s.Root, s.Bucket), 0o700); err != nil {
		return nil, err
	}
	s.proc, err = startProcess("versitygw", filepath.Join(dir, "versitygw.log"),
		[]string{"ROOT_ACCESS_KEY=" + s.AccessKey, "ROOT_SECRET_KEY=" + s.SecretKey}, true, bin,
		"--port", s.Endpoint, "--region", s.Region, "--health", "/health", "--quiet", "posix", s.Root)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	err = waitFor(ctx, "the S3 server", 100*time.Millisecond, func() error {
		resp, err := client.Get("http://" + s.Endpoint + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// Config is k3s's etcd-s3 settings for this server, uploads under folder.
func (s *S3) Config(folder string) map[string]any {
	return map[string]any{
		"etcd-s3": true, "etcd-s3-endpoint": s.Endpoint, "etcd-s3-insecure": true,
		"etcd-s3-access-key": s.AccessKey, "etcd-s3-secret-key": s.SecretKey,
		"etcd-s3-bucket": s.Bucket, "etcd-s3-folder": folder, "etcd-s3-region": s.Region,
		"etcd-s3-bucket-lookup-type": "path",
	}
}

// Objects are the object keys in the bucket under folder.
func (s *S3) Objects(folder string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.Root, s.Bucket, folder))
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range entries {
		if !e.IsDir() {
			keys = append(keys, folder+"/"+e.Name())
		}
	}
	return keys, nil
}

func (s *S3) stop() {
	if s.proc != nil {
		s.proc.Stop(5 * time.Second)
	}
}
