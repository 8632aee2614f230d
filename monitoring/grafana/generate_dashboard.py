#!/usr/bin/python3
"""Generates the Grafana dashboard for hybridcached (monitoring/grafana/hybridcache.json)
from one list of panels, PANELS below. Edit the list, then run

    /usr/bin/python3 monitoring/grafana/generate_dashboard.py          # rewrite the JSON
    /usr/bin/python3 monitoring/grafana/generate_dashboard.py --check  # exit 1 if stale

`tests/dashboard_test.py` (ctest: monitoring_dashboard) fails when a panel queries a
series the node does not export, or the JSON is not what this script writes.
Import: Grafana -> Dashboards -> Import -> the JSON; pick the Prometheus data source."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "hybridcache.json")

# Every query is filtered to the selected job and node ($job, $instance).
SEL = 'job=~"$job", instance=~"$instance"'


def rate(series, extra="", by="", window="$__rate_interval"):
    labels = SEL + (", " + extra if extra else "")
    inner = f"rate({series}{{{labels}}}[{window}])"
    return f"sum by ({by}) ({inner})" if by else f"sum({inner})"


def quantile(q, hist, extra="", by=""):
    labels = SEL + (", " + extra if extra else "")
    group = "le" + (", " + by if by else "")
    return f"histogram_quantile({q}, sum by ({group}) (rate({hist}_bucket{{{labels}}}[$__rate_interval])))"


# (section, title, unit, [(query, legend)], description)
PANELS = [
    ("Hits", "Prefix queries per second, by tier", "reqps",
     [(rate("hybridcache_match_requests_total", by="tier"), "{{tier}}")],
     "Matches served from L1 (device pools), matches that loaded their prefix back from L2 "
     "(host), and storage prefetches that brought tokens from L3."),
    ("Hits", "Hit tokens per second, by tier and component", "short",
     [(rate("hybridcache_hit_tokens_total", by="tier, component"), "{{tier}} {{component}}")],
     "kv = tokens whose KV was found; ssm = the resumable part (with an SSM state)."),
    ("Hits", "Token hit rate: KV hits of the queried tokens", "percentunit",
     [(rate("hybridcache_hit_tokens_total", 'component="kv", tier=~"l1|l2"') + " / "
       + rate("hybridcache_queried_tokens_total"), "KV hits (L1 + L2) / queried"),
      (rate("hybridcache_hit_tokens_total", 'component="ssm", tier=~"l1|l2"') + " / "
       + rate("hybridcache_queried_tokens_total"), "resumable hits / queried")],
     "The share of the tokens matches looked up (each prompt but its last token) whose KV "
     "the cache had, on the device (L1) or loaded back from the host (L2); and the share "
     "that resumes with an SSM state. L3 hits reach a match as L2 hits."),
    ("Hits", "Hit tokens per query (KV), by tier", "short",
     [(rate("hybridcache_hit_tokens_total", 'component="kv"', by="tier") + " / "
       + rate("hybridcache_match_requests_total", by="tier"), "{{tier}}")],
     "Numerator: KV hit tokens; denominator: the tier's queries (alert: HybridcacheHitRateCollapse)."),
    ("Hits", "Resumable share of KV hits (L1)", "percentunit",
     [(rate("hybridcache_hit_tokens_total", 'tier="l1", component="ssm"') + " / "
       + rate("hybridcache_hit_tokens_total", 'tier="l1", component="kv"'), "resumable / KV")],
     "A KV hit without an SSM state at its depth recomputes: this is the share that resumes "
     "(alert: HybridcacheResumableRatioCollapse)."),
    ("Pools", "KV pool tokens, by state", "short",
     [(f'sum by (exported_instance, state) (hybridcache_kv_pool_tokens{{{SEL}}})',
       "cache {{exported_instance}} {{state}}")],
     "capacity, used, evictable (cached, unlocked), protected (locked by running requests "
     "and pins) and pinned (the part of protected that pins hold)."),
    ("Pools", "SSM pool slots, by state", "short",
     [(f'sum by (exported_instance, state) (hybridcache_ssm_pool_slots{{{SEL}}})',
       "cache {{exported_instance}} {{state}}")],
     "capacity, used, evictable and protected SSM state slots; pinned: the pins, one state "
     "each."),
    ("Pools", "Inserted and evicted tokens per second", "short",
     [(rate("hybridcache_inserted_tokens_total"), "inserted"),
      (rate("hybridcache_evicted_tokens_total", by="reason"), "evicted ({{reason}})")],
     "pressure: evicted inside an allocation; explicit: evict commands."),
    ("Pools", "Evicted slots and tombstones per second", "short",
     [(rate("hybridcache_evicted_slots_total", by="reason"), "slots evicted ({{reason}})"),
      (rate("hybridcache_tombstones_created_total", by="cause"), "tombstones ({{cause}})")],
     "A tombstone is a tree node whose KV stays but whose SSM state is gone."),
    ("Forward", "Forward ops per second", "ops",
     [(rate("hybridcache_forward_ops_total", by="op"), "{{op}}")],
     "Slot snapshots, clears and copy-on-write copies the forward stream ran."),
    ("Forward", "Forward fence wait (p50 / p99)", "s",
     [(quantile(0.5, "hybridcache_forward_fence_wait_seconds"), "p50"),
      (quantile(0.99, "hybridcache_forward_fence_wait_seconds"), "p99")],
     "Time a beginForward waited for the ops queued before it."),
    ("Tiers", "Prefetch outcomes per second", "ops",
     [(rate("hybridcache_prefetch_total", by="outcome"), "{{outcome}}")],
     "Storage prefetches by outcome: completed, truncated (host memory short), timed_out, ..."),
    ("Tiers", "Prefetch and backup time (p99)", "s",
     [(quantile(0.99, "hybridcache_prefetch_seconds"), "prefetch"),
      (quantile(0.99, "hybridcache_backup_seconds", by="result"), "backup {{result}}")],
     "One prefetch's existence check and reads; one node written to L3."),
    ("Tiers", "Tier bandwidth", "Bps",
     [(rate("hybridcache_tier_bytes_total", by="tier, direction"), "{{tier}} {{direction}}"),
      (f'max by (tier, direction) (hybridcache_tier_bandwidth_bytes_per_second{{{SEL}}})',
       "last transfer {{tier}} {{direction}}")],
     "Bytes per second moved by the host pools (l2) and the L3 store, averaged, and the "
     "speed of the last timed transfer."),
    ("Tiers", "L2 host pools", "short",
     [(f'sum by (exported_instance, state) (hybridcache_host_kv_pool_tokens{{{SEL}}})',
       "cache {{exported_instance}} KV tokens {{state}}"),
      (f'sum by (exported_instance, state) (hybridcache_host_ssm_pool_slots{{{SEL}}})',
       "cache {{exported_instance}} SSM slots {{state}}")],
     "Capacity and use of each host-tier instance's L2 pools (backups, demoted nodes, "
     "prefetched prefixes)."),
    ("Tiers", "L2 evictions per second", "short",
     [(rate("hybridcache_host_evicted_tokens_total"), "KV tokens"),
      (rate("hybridcache_host_evicted_slots_total"), "SSM slots")],
     "What the host tier evicts to make room. SSM slots evicted while the KV pool has room "
     "mean the host SSM pool is the short one: each is a checkpoint the tier can no longer "
     "resume from (InstanceSpec.hicacheSsmBytes sizes it on its own)."),
    ("Tiers", "L3 store bytes", "bytes",
     [(f'max by (instance, state) (hybridcache_l3_bytes{{{SEL}}})', "{{state}} {{instance}}")],
     "What the L3 store holds against --l3-capacity (it evicts its least recently used values "
     "beyond it, or sooner when its index memory or the disk's free space runs short)."),
    ("Tiers", "L3 store values and evictions", "short",
     [(f'max by (instance) (hybridcache_l3_values{{{SEL}}})', "values {{instance}}"),
      (rate("hybridcache_l3_evicted_values_total", by="instance"), "evicted / s {{instance}}")],
     "Values held, and values evicted per second to make room."),
    ("Tiers", "L3 store reading its index", "short",
     [(f'max(hybridcache_l3_loading{{{SEL}}})', "reading")],
     "1 while a restarted node reads a large L3 index with the node serving: the L3 tier "
     "misses and skips its backups until then (README, Tiers and warm restart)."),
    ("Faults", "Faults survived per second, by kind", "short",
     [(rate("hybridcache_faults_total", by="kind"), "{{kind}}"),
      (rate("hybridcache_invariant_violations_total"), "invariant violations")],
     "README, Reliability: each kind's cause and what the node does."),
    ("Faults", "Command errors per second, by command", "short",
     [(rate("hybridcache_command_errors_total", by="command"), "{{command}}")],
     "Commands refused with a typed error (bad input, out of memory, ...)."),
    ("RPC", "RPC latency p99, by method", "s",
     [(quantile(0.99, "hybridcache_rpc_latency_seconds", by="method"), "{{method}}")],
     "Server-side time of each RPC (alert: HybridcacheStepLatencyHigh for step)."),
    ("RPC", "RPCs per second, by method", "reqps",
     [(rate("hybridcache_rpc_latency_seconds_count", by="method"), "{{method}}")],
     "Calls served."),
    ("RPC", "Sessions", "short",
     [(f'sum(hybridcache_sessions{{{SEL}}})', "sessions")],
     "Open worker sessions."),
    ("Process", "Memory", "bytes",
     [(f'max by (instance) (process_resident_memory_bytes{{{SEL}}})', "resident {{instance}}"),
      (f'max by (instance) (process_virtual_memory_bytes{{{SEL}}})', "virtual {{instance}}")],
     "The node's resident set (its index, request bookkeeping, the L3 index and the shared "
     "pools it has touched) and its address space."),
    ("Process", "CPU", "short",
     [(rate("process_cpu_seconds_total", by="instance"), "cores {{instance}}")],
     "CPU time per second (user + system): 1 = one core busy."),
    ("Process", "File descriptors", "short",
     [(f'max by (instance) (process_open_fds{{{SEL}}})', "open {{instance}}"),
      (f'max by (instance) (process_max_fds{{{SEL}}})', "limit {{instance}}")],
     "Open descriptors (connections, store files, shared memory) against the limit "
     "(alert: HybridcacheFileDescriptorsNearLimit)."),
    ("Process", "Threads and release", "short",
     [(f'max by (instance) (process_threads{{{SEL}}})', "threads {{instance}}"),
      (f'count by (version, protocol) (hybridcache_build_info{{{SEL}}})',
       "nodes on {{version}} (protocol {{protocol}})")],
     "The node's threads, and how many nodes run each release (a rolling upgrade)."),
]


def dashboard():
    panels, y, pid = [], 0, 1
    section = None
    x = 0
    for sec, title, unit, targets, description in PANELS:
        if sec != section:
            if x:
                y += 8
                x = 0
            panels.append({"type": "row", "title": sec, "id": pid, "collapsed": False,
                           "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
            pid += 1
            y += 1
            section = sec
        panels.append({
            "type": "timeseries", "title": title, "id": pid, "description": description,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
            "targets": [{"expr": q, "legendFormat": legend, "refId": chr(ord("A") + i),
                         "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                        for i, (q, legend) in enumerate(targets)],
        })
        pid += 1
        x = 12 - x
        if x == 0:
            y += 8
    var = lambda name, query: {
        "name": name, "type": "query", "label": name, "includeAll": True, "multi": True,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": {"query": query, "refId": name}, "refresh": 2, "current": {},
        "allValue": ".+"}  # ".*" alone would make every selector match-empty (refused)
    return {
        "title": "hybridcache", "uid": "hybridcache-node", "schemaVersion": 38, "version": 1,
        "tags": ["hybridcache", "llm-inference", "kv-cache"], "timezone": "browser",
        "refresh": "30s", "time": {"from": "now-3h", "to": "now"},
        "description": "hybridcached: hits per tier and component, pools, forward ops, tiers, "
                       "faults, RPC, the process. Generated by monitoring/grafana/generate_dashboard.py.",
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus",
             "current": {}},
            var("job", 'label_values(hybridcache_sessions, job)'),
            var("instance", 'label_values(hybridcache_sessions{job=~"$job"}, instance)'),
        ]},
        "panels": panels,
    }


def render():
    return json.dumps(dashboard(), indent=2, sort_keys=True) + "\n"


def queries():
    """Every PromQL expression of the dashboard (for the checks)."""
    return [q for _, _, _, targets, _ in PANELS for q, _ in targets]


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv[1:]:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit(f"{OUT} is stale: run /usr/bin/python3 {sys.argv[0]}")
        sys.exit(0)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {OUT} ({len(PANELS)} panels)")
