package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Info returns field of INFO section on client (go-redis's InfoMap), or ""
// when the server does not report it (an errorstats counter that never
// counted, a field of another server version). section is the argument of
// INFO, as in "replication"; field is as the server spells it, as in
// "master_link_status". Through a Cluster client it asks one node, chosen
// by go-redis: ask a node's own client when the node matters. It blocks for
// one round trip, at most 5 s, and fails the test if INFO fails.
func Info(t testing.TB, client redis.UniversalClient, section, field string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	v, err := infoMap(ctx, client, section, field)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return v
}

// infoMap is [Info] returning its error.
func infoMap(ctx context.Context, client redis.UniversalClient, section, field string) (string, error) {
	sections, err := client.InfoMap(ctx, section).Result()
	if err != nil {
		return "", fmt.Errorf("INFO %s: %w", section, err)
	}
	// InfoMap keys sections by their header ("Replication"), not by the
	// argument ("replication"); one section was asked for.
	for _, fields := range sections {
		if v, ok := fields[field]; ok {
			return v, nil
		}
	}
	return "", nil
}

// Version is a server's implementation and version, from INFO server.
type Version struct {
	// Server is "redis" or "valkey" (INFO server's server_name, which
	// Redis leaves out).
	Server string
	// Major, Minor and Patch are the numbers of valkey_version on Valkey
	// (whose redis_version stays at 7.2.4 for clients' sake) and of
	// redis_version on Redis.
	Major, Minor, Patch int
}

// String returns the version as in "valkey 9.1.2".
func (v Version) String() string {
	return fmt.Sprintf("%s %d.%d.%d", v.Server, v.Major, v.Minor, v.Patch)
}

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// ServerVersion returns the version of the server behind client (INFO
// server; through a Cluster client, of one node: the harness's Clusters
// run one version). It blocks for one round trip, at most 5 s, and fails
// the test if INFO fails or reports no version it can read.
func ServerVersion(t testing.TB, client redis.UniversalClient) Version {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	sections, err := client.InfoMap(ctx, "server").Result()
	if err != nil {
		t.Fatalf("redistest: INFO server: %v", err)
	}
	var fields map[string]string
	for _, f := range sections {
		fields = f
	}
	v, err := parseVersion(fields)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return v
}

// parseVersion reads a Version from the fields of INFO server.
func parseVersion(fields map[string]string) (Version, error) {
	v := Version{Server: "redis"}
	text := fields["redis_version"]
	if vv, ok := fields["valkey_version"]; ok {
		v.Server, text = "valkey", vv
	}
	parts := strings.Split(text, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("INFO server: version %q is not MAJOR.MINOR.PATCH", text)
	}
	for i, p := range []*int{&v.Major, &v.Minor, &v.Patch} {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return Version{}, fmt.Errorf("INFO server: version %q is not MAJOR.MINOR.PATCH", text)
		}
		*p = n
	}
	return v, nil
}
