package deviceplugin

import (
	"context"
	"fmt"
	"maps"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// server is the DevicePlugin service the kubelet calls.
type server struct {
	api.UnimplementedDevicePluginServer
	nics     *nicSet
	provider Provider
	// cdi and direct say which of the two ways Allocate describes the
	// devices in (Config.CDI, Config.Direct).
	cdi, direct bool
	// stop ends the ListAndWatch streams when the plugin stops serving.
	stop <-chan struct{}
}

func (s *server) GetDevicePluginOptions(context.Context, *api.Empty) (*api.DevicePluginOptions, error) {
	// Nothing to do before a container starts, no preference among NICs.
	return &api.DevicePluginOptions{}, nil
}

// ListAndWatch sends the NICs, then again each time the list or a NIC's
// health changes, until the kubelet or the plugin ends the stream.
func (s *server) ListAndWatch(_ *api.Empty, stream api.DevicePlugin_ListAndWatchServer) error {
	for {
		nics, changed := s.nics.snapshot()
		if err := stream.Send(listResponse(nics)); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		case <-s.stop:
			return nil
		}
	}
}

func listResponse(nics []NIC) *api.ListAndWatchResponse {
	r := &api.ListAndWatchResponse{}
	for _, n := range nics {
		health := api.Unhealthy
		if n.Healthy {
			health = api.Healthy
		}
		r.Devices = append(r.Devices, &api.Device{ID: n.Name, Health: health})
	}
	return r
}

// Allocate answers for each container with the NICs the kubelet chose.
func (s *server) Allocate(_ context.Context, req *api.AllocateRequest) (*api.AllocateResponse, error) {
	resp := &api.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		cr, err := s.allocateContainer(c.DevicesIds)
		if err != nil {
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, cr)
	}
	return resp, nil
}

func (s *server) allocateContainer(ids []string) (*api.ContainerAllocateResponse, error) {
	for _, id := range ids {
		if !s.nics.has(id) {
			return nil, status.Errorf(codes.InvalidArgument, "no NIC %q on this node", id)
		}
	}
	cr := &api.ContainerAllocateResponse{}
	if s.cdi {
		names, err := s.provider.CDIDevices(ids)
		if err != nil {
			return nil, status.Error(codes.Internal, fmt.Sprintf("CDI names of %v: %v", ids, err))
		}
		for _, n := range names {
			cr.CdiDevices = append(cr.CdiDevices, &api.CDIDevice{Name: n})
		}
	}
	if s.direct {
		e, err := s.provider.Edits(ids)
		if err != nil {
			return nil, status.Error(codes.Internal, fmt.Sprintf("mounts of %v: %v", ids, err))
		}
		cr.Envs = maps.Clone(e.Env)
		for _, m := range e.Mounts {
			cr.Mounts = append(cr.Mounts, &api.Mount{HostPath: m.HostPath, ContainerPath: m.ContainerPath, ReadOnly: m.ReadOnly})
		}
		for _, d := range e.Devices {
			cr.Devices = append(cr.Devices, &api.DeviceSpec{HostPath: d.HostPath, ContainerPath: d.ContainerPath, Permissions: d.Permissions})
		}
	}
	return cr, nil
}

// PreStartContainer is never called (the options ask for no call), but
// a kubelet that calls it anyway gets an answer, not an error.
func (s *server) PreStartContainer(context.Context, *api.PreStartContainerRequest) (*api.PreStartContainerResponse, error) {
	return &api.PreStartContainerResponse{}, nil
}
