package org.shedlab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.loadbalance.extensions.LoadManagerContext;
import org.apache.pulsar.broker.loadbalance.extensions.data.BrokerLoadData;
import org.apache.pulsar.broker.loadbalance.extensions.data.BrokerLookupData;
import org.apache.pulsar.broker.loadbalance.extensions.data.TopBundlesLoadData;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerFilter;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerLoadManagerClassFilter;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerMaxTopicCountFilter;
import org.apache.pulsar.broker.loadbalance.extensions.filter.BrokerVersionFilter;
import org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight;

/**
 * The "extplace" kind: the extensible load manager's placement as its selectAsync runs it for a bundle of a
 * namespace without policies: the available brokers (a ConcurrentHashMap copy of the registry's) through the
 * pipeline's broker filters in Pulsar's order (BrokerLoadManagerClassFilter, BrokerMaxTopicCountFilter,
 * BrokerVersionFilter; a filter that fails is logged and the candidates it left go on, as selectAsync does),
 * then extensions.strategy.LeastResourceUsageWithWeight over what is left.
 *
 * <p>A case: {"id", "kind": "extplace", "strategy": "ExtensibleLeastResourceUsageWithWeight", "conf",
 * "steps": [{"brokerLoadData": {broker: BrokerLoadData JSON}, "brokerLookupData": {broker: BrokerLookupData
 * JSON}, "bundle": name}]}. Answer: {"id", "steps": [{"candidates": [sorted ids after the filters],
 * "filterError": bool, "best": [the strategy's best brokers] or null, "chosen": id or null}]}.
 */
final class ExtPlace {
    private ExtPlace() {
    }

    static void answer(JsonNode c, ServiceConfiguration conf, ObjectMapper mapper, ObjectNode ans) throws Exception {
        LeastResourceUsageWithWeight s = new LeastResourceUsageWithWeight();
        List<BrokerFilter> pipeline = List.of(new BrokerLoadManagerClassFilter(), new BrokerMaxTopicCountFilter(),
                new BrokerVersionFilter());
        ArrayNode steps = ans.putArray("steps");
        for (JsonNode step : c.path("steps")) {
            Map<String, BrokerLoadData> load = Ext.brokerLoad(mapper, step.path("brokerLoadData"), 0);
            Map<String, BrokerLookupData> available = Ext.lookup(mapper, step.path("brokerLookupData"));
            LoadManagerContext ctx = Ext.context(conf, load, new HashMap<String, TopBundlesLoadData>(),
                    available);
            Map<String, BrokerLookupData> cands = new ConcurrentHashMap<>(new HashMap<>(available));
            boolean failed = false;
            for (BrokerFilter f : pipeline) {
                try {
                    f.filterAsync(cands, null, ctx).get(30, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    failed = true;  // selectAsync logs it and goes on with the candidates left
                }
            }
            ObjectNode o = steps.addObject();
            ArrayNode ca = o.putArray("candidates");
            for (String b : new TreeSet<>(cands.keySet())) {
                ca.add(b);
            }
            o.put("filterError", failed);
            if (cands.isEmpty()) {
                o.putNull("best");
                o.putNull("chosen");
                continue;
            }
            Optional<String> got = s.select(cands.keySet(), null, ctx);
            @SuppressWarnings("unchecked")
            ThreadLocal<ArrayList<String>> best = (ThreadLocal<ArrayList<String>>) Transfer.field(s, "bestBrokers");
            ArrayNode a = o.putArray("best");
            for (String b : new TreeSet<>(best.get())) {
                a.add(b);
            }
            if (got.isPresent()) {
                o.put("chosen", got.get());
            } else {
                o.putNull("chosen");
            }
        }
    }
}
