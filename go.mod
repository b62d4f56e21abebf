module github.com/daqiri-go/daqiri

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/gopacket/gopacket v1.7.7 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
