package org.shedlab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.common.hash.Hashing;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.apache.pulsar.broker.namespace.NamespaceService;
import org.apache.pulsar.common.naming.BundleSplitOption;
import org.apache.pulsar.common.naming.FlowOrQpsEquallyDivideBundleSplitOption;
import org.apache.pulsar.common.naming.NamespaceBundle;
import org.apache.pulsar.common.naming.NamespaceBundleFactory;
import org.apache.pulsar.common.naming.NamespaceBundleSplitAlgorithm;
import org.apache.pulsar.common.naming.NamespaceBundles;
import org.apache.pulsar.common.naming.NamespaceName;
import org.apache.pulsar.common.naming.TopicName;
import org.apache.pulsar.common.policies.data.stats.TopicStatsImpl;

/**
 * The "bundle" case: Pulsar's topic → bundle lookup ({@code NamespaceBundles.findBundle}) and its split
 * algorithms' boundaries ({@code NamespaceBundleSplitAlgorithm.getSplitBoundary}).
 *
 * <p>A case: {"kind": "bundle", "namespace", "boundaries": [long...], "lookups": [topic...],
 * "splits": [{"bundle": index, "algorithm", "topics": [...], "msgRate": [...], "throughput": [...],
 * "positions": [...], "force", "conf": {maxMsgRate, maxBandwidthMbytes, diffPercentage}}]}.
 * Answer: {"lookups": [range or "error: ..."], "splits": [[points...] or null or "error: ..."]}.
 *
 * <p>The factory is Pulsar's class with only the parts these paths read (its CRC-32 hash function and, where
 * the line has one, the consistent-hashing topic assigner) set: its constructor needs a running broker. The
 * namespace service is a subclass that answers only {@code getOwnedTopicListForNamespaceBundle}, filtering the
 * namespace's topics by {@code bundle.includes}, as the real one does.
 */
final class Bundles {
    private Bundles() {
    }

    /** Answers the owned-topic list from a given namespace topic list; nothing else is ever called. */
    static final class TopicsService extends NamespaceService {
        List<String> topics;

        TopicsService() {
            super(null);
        }

        @Override
        public CompletableFuture<List<String>> getOwnedTopicListForNamespaceBundle(NamespaceBundle bundle) {
            return CompletableFuture.completedFuture(topics.stream()
                    .filter(t -> bundle.includes(TopicName.get(t))).collect(Collectors.toList()));
        }
    }

    private static sun.misc.Unsafe unsafe() throws Exception {
        Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        return (sun.misc.Unsafe) f.get(null);
    }

    private static void set(Object o, String name, Object v) throws Exception {
        Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        f.set(o, v);
    }

    static NamespaceBundleFactory factory() throws Exception {
        NamespaceBundleFactory f = (NamespaceBundleFactory) unsafe().allocateInstance(NamespaceBundleFactory.class);
        set(f, "hashFunc", Hashing.crc32());
        try {  // the lines with a pluggable topic → bundle assignment
            Class<?> k = Class.forName("org.apache.pulsar.common.naming.ConsistentHashingTopicBundleAssigner");
            set(f, "topicBundleAssignmentStrategy", k.getDeclaredConstructor().newInstance());
        } catch (ClassNotFoundException | NoSuchFieldException e) {
            // the line hashes in NamespaceBundles.findBundle itself
        }
        return f;
    }

    static NamespaceBundles bundles(NamespaceName ns, NamespaceBundleFactory f, long[] parts) throws Exception {
        Constructor<NamespaceBundles> c = NamespaceBundles.class.getDeclaredConstructor(NamespaceName.class,
                NamespaceBundleFactory.class, Optional.class, long[].class);
        c.setAccessible(true);
        return c.newInstance(ns, f, Optional.empty(), parts);
    }

    private static String err(Throwable t) {
        Throwable r = t;
        while (r.getCause() != null && r.getCause() != r) {
            r = r.getCause();
        }
        return "error: " + r.getClass().getSimpleName();
    }

    static void answer(JsonNode c, ObjectNode ans) throws Exception {
        NamespaceName ns = NamespaceName.get(c.path("namespace").asText());
        NamespaceBundleFactory f = factory();
        JsonNode b = c.path("boundaries");
        long[] parts = new long[b.size()];
        for (int i = 0; i < parts.length; i++) {
            parts[i] = b.get(i).asLong();
        }
        NamespaceBundles bundles = bundles(ns, f, parts);
        ArrayNode lookups = ans.putArray("lookups");
        for (JsonNode t : c.path("lookups")) {
            try {
                NamespaceBundle got = bundles.findBundle(TopicName.get(t.asText()));
                lookups.add(got.getBundleRange());
            } catch (Throwable e) {
                lookups.add(err(e));
            }
        }
        ArrayNode splits = ans.putArray("splits");
        TopicsService svc = (TopicsService) unsafe().allocateInstance(TopicsService.class);
        for (JsonNode s : c.path("splits")) {
            try {
                NamespaceBundle bundle = bundles.getBundles().get(s.path("bundle").asInt());
                List<String> topics = new ArrayList<>();
                s.path("topics").forEach(x -> topics.add(x.asText()));
                svc.topics = topics;
                List<Long> positions = null;
                if (s.has("positions")) {
                    positions = new ArrayList<>();
                    for (JsonNode x : s.path("positions")) {
                        positions.add(x.asLong());
                    }
                }
                String name = s.path("algorithm").asText();
                NamespaceBundleSplitAlgorithm alg;
                BundleSplitOption opt;
                if (name.equals("flow_or_qps_equally_divide")) {
                    Map<String, TopicStatsImpl> stats = new HashMap<>();
                    for (int i = 0; i < topics.size(); i++) {
                        JsonNode r = s.path("msgRate").get(i);
                        JsonNode th = s.path("throughput").get(i);
                        if (r == null || r.isNull() || th == null || th.isNull()) {
                            continue;  // no stats for the topic
                        }
                        TopicStatsImpl st = new TopicStatsImpl();
                        st.msgRateIn = r.asDouble();
                        st.msgThroughputIn = th.asDouble();
                        stats.put(topics.get(i), st);
                    }
                    JsonNode k = s.path("conf");
                    opt = new FlowOrQpsEquallyDivideBundleSplitOption(svc, bundle, positions, stats,
                            k.path("loadBalancerNamespaceBundleMaxMsgRate").asInt(30000),
                            k.path("loadBalancerNamespaceBundleMaxBandwidthMbytes").asInt(100),
                            k.path("flowOrQpsDifferenceThresholdPercentage").asInt(10));
                    alg = NamespaceBundleSplitAlgorithm.of(name);
                } else {
                    opt = new BundleSplitOption(svc, bundle, positions);
                    alg = name.equals("specified_positions_divide") && s.path("force").asBoolean(false)
                            ? new org.apache.pulsar.common.naming.SpecifiedPositionsBundleSplitAlgorithm(true)
                            : NamespaceBundleSplitAlgorithm.of(name);
                }
                List<Long> pts = alg.getSplitBoundary(opt).get();
                if (pts == null) {
                    splits.addNull();
                } else {
                    ArrayNode a = splits.addArray();
                    pts.forEach(a::add);
                }
            } catch (Throwable e) {
                splits.add(err(e));
            }
        }
    }
}
