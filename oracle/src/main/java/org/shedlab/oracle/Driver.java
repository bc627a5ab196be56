package org.shedlab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.common.collect.Multimap;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.pulsar.policies.data.loadbalancer.BrokerData;
import org.apache.pulsar.policies.data.loadbalancer.BundleData;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.policies.data.loadbalancer.TimeAverageBrokerData;
import org.apache.pulsar.broker.loadbalance.LoadData;
import org.apache.pulsar.broker.loadbalance.LoadSheddingStrategy;
import org.apache.pulsar.broker.loadbalance.ModularLoadManagerStrategy;
import org.apache.pulsar.common.configuration.PulsarConfigurationLoader;
import org.apache.pulsar.common.util.ObjectMapperFactory;
import org.apache.pulsar.policies.data.loadbalancer.LocalBrokerData;

/**
 * Shedlab's oracle driver: reads one JSON case per line on stdin, runs Pulsar's own load-balancing
 * classes on it, prints one JSON decision per line on stdout (same order, same "id").
 *
 * <p>A case: {"id", "kind": "shed"|"place", "strategy": short class name, "conf": {broker.conf key: value},
 * "cycles": [LoadData JSON, ...]} for shedding (one strategy instance across the cycles), or
 * {"steps": [{"data": LoadData JSON, "bundle": name, "candidates": [broker ids]}]} for placement, or a
 * "bundle" case (topic → bundle lookups and split boundaries: see {@link Bundles}), a "filters" case
 * (selectBrokerForAssignment's candidate filters: see {@link Filters}), a "transfer" case (the
 * extensible TransferShedder: see {@link Transfer}) or an "extplace" case (the extensible placement: see
 * {@link ExtPlace}).
 * LoadData JSON is the shape Shedlab reads: "brokers" (id -> load report), "bundleData", "timeAverageData",
 * "preallocatedBundleData", "recentlyUnloadedBundles". Every object is built by Pulsar's own Jackson mapper.
 *
 * <p>Answer: {"id", "cycles": [[[broker, bundle], ...], ...], "plans": [{bundle: broker}] (AvgShedder)} or
 * {"id", "steps": [{"best": [ids] or null, "chosen": id or null}]}, or {"id", "error": text} when Pulsar's
 * code throws.
 */
public final class Driver {
    private static final String IMPL = "org.apache.pulsar.broker.loadbalance.impl.";
    private final ObjectMapper mapper = ObjectMapperFactory.create();

    public static void main(String[] args) throws Exception {
        // Pulsar's classes log through slf4j; keep stdout for answers only
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
                StandardCharsets.UTF_8);
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        Driver d = new Driver();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            out.println(d.answer(line));
            out.flush();
        }
    }

    String answer(String line) throws Exception {
        JsonNode c = mapper.readTree(line);
        ObjectNode ans = mapper.createObjectNode();
        ans.set("id", c.get("id"));
        try {
            String kind = c.path("kind").asText();
            ServiceConfiguration conf = Ext.KINDS.contains(kind) ? Ext.conf(this, c.path("conf")) : conf(c.path("conf"));
            if (kind.equals("shed")) {
                shed(c, conf, ans);
            } else if (kind.equals("place")) {
                place(c, conf, ans);
            } else if (kind.equals("bundle")) {
                Bundles.answer(c, ans);
            } else if (kind.equals("filters")) {
                Filters.answer(this, c, conf, ans);
            } else if (kind.equals("transfer")) {
                Transfer.answer(c, conf, mapper, ans);
            } else if (kind.equals("extplace")) {
                ExtPlace.answer(c, conf, mapper, ans);
            } else if (kind.equals("version")) {
                ans.put("version", org.apache.pulsar.PulsarVersion.getVersion());
            } else {
                throw new IllegalArgumentException("unknown kind " + kind);
            }
        } catch (Throwable t) {
            ans.removeAll();
            ans.set("id", c.get("id"));
            Throwable root = t;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            ans.put("error", t.getClass().getSimpleName() + ": " + t.getMessage()
                    + (root != t ? " (" + root.getClass().getSimpleName() + ": " + root.getMessage() + ")" : ""));
        }
        return mapper.writeValueAsString(ans);
    }

    ObjectMapper mapper() {
        return mapper;
    }

    /** ServiceConfiguration from broker.conf keys, parsed the way Pulsar parses broker.conf. */
    ServiceConfiguration conf(JsonNode keys) throws Exception {
        Properties p = new Properties();
        Iterator<Map.Entry<String, JsonNode>> it = keys.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            p.setProperty(e.getKey(), e.getValue().asText());
        }
        return PulsarConfigurationLoader.create(p, ServiceConfiguration.class);
    }

    LoadData loadData(JsonNode obj) throws Exception {
        LoadData ld = new LoadData();
        Iterator<Map.Entry<String, JsonNode>> it = obj.path("brokers").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            LocalBrokerData local = mapper.treeToValue(e.getValue(), LocalBrokerData.class);
            ld.getBrokerData().put(e.getKey(), new BrokerData(local));
        }
        it = obj.path("bundleData").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            ld.getBundleData().put(e.getKey(), mapper.treeToValue(e.getValue(), BundleData.class));
        }
        it = obj.path("timeAverageData").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            BrokerData bd = ld.getBrokerData().get(e.getKey());
            if (bd != null) {
                bd.setTimeAverageData(mapper.treeToValue(e.getValue(), TimeAverageBrokerData.class));
            }
        }
        it = obj.path("preallocatedBundleData").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            BrokerData bd = ld.getBrokerData().get(e.getKey());
            Iterator<Map.Entry<String, JsonNode>> b = e.getValue().fields();
            while (bd != null && b.hasNext()) {
                Map.Entry<String, JsonNode> x = b.next();
                bd.getPreallocatedBundleData().put(x.getKey(), mapper.treeToValue(x.getValue(), BundleData.class));
            }
        }
        it = obj.path("recentlyUnloadedBundles").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            ld.getRecentlyUnloadedBundles().put(e.getKey(), e.getValue().asLong());
        }
        return ld;
    }

    void shed(JsonNode c, ServiceConfiguration conf, ObjectNode ans) throws Exception {
        LoadSheddingStrategy s = (LoadSheddingStrategy) Class.forName(IMPL + c.path("strategy").asText())
                .getDeclaredConstructor().newInstance();
        ArrayNode cycles = ans.putArray("cycles");
        ArrayNode plans = null;
        boolean carry = c.path("carryUnloaded").asBoolean(false);
        Map<String, Long> carried = new java.util.LinkedHashMap<>();
        for (JsonNode cyc : c.path("cycles")) {
            LoadData ld = loadData(cyc);
            ld.getRecentlyUnloadedBundles().putAll(carried);
            s.onActiveBrokersChange(new HashSet<>(ld.getBrokerData().keySet()));
            Multimap<String, String> sel = s.findBundlesForUnloading(ld, conf);
            ArrayNode out = cycles.addArray();
            for (Map.Entry<String, String> e : sel.entries()) {
                out.addArray().add(e.getKey()).add(e.getValue());
                if (carry) {  // what doLoadShedding records for an unloaded bundle
                    carried.put(e.getValue(), cyc.path("now").asLong(0));
                }
            }
            Map<?, ?> plan = privateMap(s, "bundleBrokerMap");
            if (plan != null) {
                if (plans == null) {
                    plans = ans.putArray("plans");
                }
                // the plan is keyed by BundleData values: name each key by the bundles whose data equals it
                Map<Object, java.util.TreeSet<String>> names = new java.util.HashMap<>();
                ld.getBundleData().forEach((k, v) -> names.computeIfAbsent(v, x -> new java.util.TreeSet<>()).add(k));
                ObjectNode p = plans.addObject();
                for (Map.Entry<?, ?> e : plan.entrySet()) {
                    java.util.TreeSet<String> b = names.get(e.getKey());
                    p.put(b == null ? "?" : String.join("|", b), String.valueOf(e.getValue()));
                }
            }
        }
    }

    void place(JsonNode c, ServiceConfiguration conf, ObjectNode ans) throws Exception {
        ModularLoadManagerStrategy s = (ModularLoadManagerStrategy) Class.forName(IMPL + c.path("strategy").asText())
                .getDeclaredConstructor().newInstance();
        ArrayNode steps = ans.putArray("steps");
        for (JsonNode step : c.path("steps")) {
            LoadData ld = loadData(step.path("data"));
            s.onActiveBrokersChange(new HashSet<>(ld.getBrokerData().keySet()));
            Set<String> cands = new HashSet<>();
            for (JsonNode x : step.path("candidates")) {
                cands.add(x.asText());
            }
            String bundle = step.path("bundle").asText();
            BundleData bd = ld.getBundleData().get(bundle);
            if (bd == null) {
                bd = new BundleData(10, 1000);  // Pulsar's default sample sizes for a new bundle
            }
            Optional<String> got = s.selectBroker(cands, bd, ld, conf);
            ObjectNode o = steps.addObject();
            List<?> best = privateList(s, "bestBrokers");
            if (best != null) {
                ArrayNode a = o.putArray("best");
                for (Object x : new ArrayList<>(best)) {
                    a.add(String.valueOf(x));
                }
            } else {
                o.putNull("best");
            }
            if (got.isPresent()) {
                o.put("chosen", got.get());
            } else {
                o.putNull("chosen");
            }
        }
    }

    private static Object privateField(Object o, String name) {
        for (Class<?> k = o.getClass(); k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // try the superclass
            } catch (IllegalAccessException e) {
                return null;
            }
        }
        return null;
    }

    private static Map<?, ?> privateMap(Object o, String name) {
        Object v = privateField(o, name);
        return v instanceof Map ? (Map<?, ?>) v : null;
    }

    private static List<?> privateList(Object o, String name) {
        Object v = privateField(o, name);
        return v instanceof List ? (List<?>) v : null;
    }
}
