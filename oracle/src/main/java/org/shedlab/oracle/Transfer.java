package org.shedlab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.loadbalance.extensions.LoadManagerContext;
import org.apache.pulsar.broker.loadbalance.extensions.data.BrokerLoadData;
import org.apache.pulsar.broker.loadbalance.extensions.data.BrokerLookupData;
import org.apache.pulsar.broker.loadbalance.extensions.data.TopBundlesLoadData;
import org.apache.pulsar.broker.loadbalance.extensions.models.Unload;
import org.apache.pulsar.broker.loadbalance.extensions.models.UnloadCounter;
import org.apache.pulsar.broker.loadbalance.extensions.models.UnloadDecision;
import org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder;

/**
 * The "transfer" kind: Pulsar's TransferShedder across cycles, one instance (its hit count carried), built as
 * its unit tests build it (the counter-only constructor: no service-unit channel, no filter pipeline, no
 * policies, so every bundle counts as owned by the broker reporting it and as transferable).
 *
 * <p>A case: {"id", "kind": "transfer", "strategy": "TransferShedder", "conf", "carryUnloaded": bool,
 * "recentlyUnloadedBundles": {bundle: ms}, "recentlyUnloadedBrokers": {broker: ms}, "cycles": [{"now": ms,
 * "brokerLoadData": {broker: BrokerLoadData JSON}, "topBundlesLoadData": {broker: TopBundlesLoadData JSON},
 * "available": [broker ids in the registry]}]}. Times are the case's: each cycle's BrokerLoadData updatedAt
 * and the recently-unloaded brokers' times are shifted by (wall clock - the cycle's "now") on the way in (and
 * back on the way out), since TransferShedder reads the wall clock for the TTL.
 *
 * <p>Answer: {"id", "cycles": [{"decisions": [[source, bundle, destination or null, reason], ...] sorted,
 * "counter": {"Label:Reason": increments this cycle}, "hitCount": unloadConditionHitCount after the cycle}]}.
 * With "carryUnloaded", each Success unload is recorded as the unload scheduler records it (bundle and source
 * broker at the cycle's time) for the next cycles.
 */
final class Transfer {
    private Transfer() {
    }

    static void answer(JsonNode c, ServiceConfiguration conf, ObjectMapper mapper, ObjectNode ans) throws Exception {
        UnloadCounter counter = new UnloadCounter();
        TransferShedder s = new TransferShedder(counter);
        boolean carry = c.path("carryUnloaded").asBoolean(false);
        Map<String, Long> bundles = new HashMap<>();
        c.path("recentlyUnloadedBundles").fields().forEachRemaining(e -> bundles.put(e.getKey(), e.getValue().asLong()));
        Map<String, Long> brokers = new HashMap<>();
        c.path("recentlyUnloadedBrokers").fields().forEachRemaining(e -> brokers.put(e.getKey(), e.getValue().asLong()));
        ArrayNode cycles = ans.putArray("cycles");
        for (JsonNode cyc : c.path("cycles")) {
            long now = cyc.path("now").asLong();
            long shift = System.currentTimeMillis() - now;
            Map<String, BrokerLoadData> load = Ext.brokerLoad(mapper, cyc.path("brokerLoadData"), shift);
            Map<String, TopBundlesLoadData> top = Ext.topBundles(mapper, cyc.path("topBundlesLoadData"));
            Map<String, BrokerLookupData> available = new HashMap<>();
            for (JsonNode b : cyc.path("available")) {
                available.put(b.asText(), null);
            }
            LoadManagerContext ctx = Ext.context(conf, load, top, available);
            Map<String, Long> shifted = new HashMap<>();
            brokers.forEach((k, v) -> shifted.put(k, v + shift));
            Map<String, Long> before = counts(counter);
            Set<UnloadDecision> got = s.findBundlesForUnloading(ctx, bundles, shifted);
            brokers.clear();
            shifted.forEach((k, v) -> brokers.put(k, v - shift));
            List<List<String>> rows = new ArrayList<>();
            for (UnloadDecision d : got) {
                Unload u = d.getUnload();
                List<String> row = new ArrayList<>();
                row.add(u.sourceBroker());
                row.add(u.serviceUnit());
                row.add(u.destBroker().orElse(null));
                row.add(d.getLabel() + ":" + d.getReason());
                rows.add(row);
            }
            rows.sort((a, b) -> String.valueOf(a).compareTo(String.valueOf(b)));
            ObjectNode o = cycles.addObject();
            ArrayNode ds = o.putArray("decisions");
            for (List<String> row : rows) {
                ArrayNode a = ds.addArray();
                for (String x : row) {
                    if (x == null) {
                        a.addNull();
                    } else {
                        a.add(x);
                    }
                }
            }
            ObjectNode cnt = o.putObject("counter");
            Map<String, Long> after = counts(counter);
            after.forEach((k, v) -> {
                long d = v - before.getOrDefault(k, 0L);
                if (d != 0) {
                    cnt.put(k, d);
                }
            });
            o.put("hitCount", ((Number) field(s, "unloadConditionHitCount")).intValue());
            if (carry) {
                for (UnloadDecision d : got) {
                    if (d.getLabel() == UnloadDecision.Label.Success) {
                        bundles.put(d.getUnload().serviceUnit(), now);
                        brokers.put(d.getUnload().sourceBroker(), now);
                    }
                }
            }
        }
    }

    /** The counter's breakdown, "Label:Reason" -> count. */
    private static Map<String, Long> counts(UnloadCounter counter) throws Exception {
        Map<String, Long> out = new TreeMap<>();
        Map<?, ?> bd = (Map<?, ?>) field(counter, "breakdownCounters");
        for (Map.Entry<?, ?> e : bd.entrySet()) {
            for (Map.Entry<?, ?> r : ((Map<?, ?>) e.getValue()).entrySet()) {
                out.put(e.getKey() + ":" + r.getKey(), ((AtomicLong) r.getValue()).get());
            }
        }
        return out;
    }

    static Object field(Object o, String name) throws Exception {
        for (Class<?> k = o.getClass(); k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // the superclass
            }
        }
        throw new NoSuchFieldException(name);
    }
}
