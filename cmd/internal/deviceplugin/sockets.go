package deviceplugin

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// dialUnix makes a gRPC client of the unix socket path (no TLS: the
// socket's directory is the kubelet's, root's alone).
func dialUnix(path string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// fileID identifies a file: a socket made anew differs in inode or, if
// the file system gave the inode number again, in change time.
type fileID struct {
	ino  uint64
	ctim syscall.Timespec
}

// inodeOf identifies the file at path.
func inodeOf(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("%s: no inode", path)
	}
	return fileID{st.Ino, st.Ctim}, nil
}

// waitForKubelet waits until the kubelet's socket exists and returns its
// inode. It fails if the plugin's own socket goes meanwhile.
func waitForKubelet(ctx context.Context, kubelet string, every time.Duration, own string, ownIno fileID) (fileID, error) {
	for {
		if ino, err := inodeOf(kubelet); err == nil {
			return ino, nil
		}
		if ino, err := inodeOf(own); err != nil || ino != ownIno {
			return fileID{}, fmt.Errorf("%s removed while waiting for the kubelet", own)
		}
		select {
		case <-ctx.Done():
			return fileID{}, ctx.Err()
		case <-time.After(every):
		}
	}
}

// watchSockets returns errKubeletRestarted once the kubelet's socket is
// made anew or the plugin's own is removed (a kubelet starting removes
// every plugin's socket), or nil when ctx ends.
func watchSockets(ctx context.Context, every time.Duration, kubelet string, kubeletIno fileID, own string, ownIno fileID) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
		if ino, err := inodeOf(own); err != nil || ino != ownIno {
			return fmt.Errorf("%w: %s removed", errKubeletRestarted, own)
		}
		// A kubelet socket that is gone for now is a kubelet restarting:
		// wait for the new one rather than register with nothing.
		if ino, err := inodeOf(kubelet); err == nil && ino != kubeletIno {
			return fmt.Errorf("%w: %s made anew", errKubeletRestarted, kubelet)
		}
	}
}
