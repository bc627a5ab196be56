package org.shedlab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.loadbalance.extensions.BrokerRegistry;
import org.apache.pulsar.broker.loadbalance.extensions.LoadManagerContext;
import org.apache.pulsar.broker.loadbalance.extensions.data.BrokerLoadData;
import org.apache.pulsar.broker.loadbalance.extensions.data.BrokerLookupData;
import org.apache.pulsar.broker.loadbalance.extensions.data.TopBundlesLoadData;
import org.apache.pulsar.broker.loadbalance.extensions.store.LoadDataStore;

/**
 * The extensible load manager's context for the oracle, built the way Pulsar's own unit tests build it: the
 * two load-data stores (each a ConcurrentHashMap, as the table view behind the real store) and the broker
 * registry's available brokers. Interfaces are answered by dynamic proxies (the same code runs against every
 * line whatever default methods its interfaces have); anything the strategies call beyond reading the stores
 * fails loudly.
 */
final class Ext {
    private Ext() {
    }

    /** The kinds this class serves (their configs are cached: the strategies only read them). */
    static final java.util.Set<String> KINDS = java.util.Set.of("transfer", "extplace");

    private static final Map<String, ServiceConfiguration> CONFS = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, ServiceConfiguration> e) {
            return size() > 256;
        }
    };

    /** The driver's ServiceConfiguration for these keys, built once per distinct set of keys (building one
     * reflects over every field of ServiceConfiguration: the bulk of a small case's time). */
    static ServiceConfiguration conf(Driver d, JsonNode keys) throws Exception {
        String k = keys.toString();
        ServiceConfiguration got = CONFS.get(k);
        if (got == null) {
            got = d.conf(keys);
            CONFS.put(k, got);
        }
        return got;
    }

    /** A LoadDataStore over {@code data}: get, entrySet, size, forEach, keySet, items. */
    @SuppressWarnings("unchecked")
    static <T> LoadDataStore<T> store(Map<String, T> data) {
        InvocationHandler h = (proxy, m, args) -> {
            switch (m.getName()) {
                case "get":
                    return Optional.ofNullable(data.get((String) args[0]));
                case "entrySet":
                    return data.entrySet();
                case "keySet":
                    return data.keySet();
                case "items":
                    return data.entrySet();
                case "size":
                    return data.size();
                case "forEach":
                    data.forEach((BiConsumer<String, T>) args[0]);
                    return null;
                case "toString":
                    return "oracle store " + data.keySet();
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                default:
                    throw new UnsupportedOperationException("LoadDataStore." + m.getName());
            }
        };
        return (LoadDataStore<T>) Proxy.newProxyInstance(Ext.class.getClassLoader(),
                new Class<?>[]{LoadDataStore.class}, h);
    }

    static BrokerRegistry registry(Map<String, BrokerLookupData> available) {
        InvocationHandler h = (proxy, m, args) -> {
            switch (m.getName()) {
                case "getAvailableBrokerLookupDataAsync":
                    return CompletableFuture.completedFuture(new java.util.HashMap<>(available));
                case "getAvailableBrokersAsync":
                    return CompletableFuture.completedFuture(new java.util.ArrayList<>(available.keySet()));
                case "toString":
                    return "oracle registry " + available.keySet();
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                default:
                    throw new UnsupportedOperationException("BrokerRegistry." + m.getName());
            }
        };
        return (BrokerRegistry) Proxy.newProxyInstance(Ext.class.getClassLoader(),
                new Class<?>[]{BrokerRegistry.class}, h);
    }

    static LoadManagerContext context(ServiceConfiguration conf, Map<String, BrokerLoadData> load,
                                      Map<String, TopBundlesLoadData> top, Map<String, BrokerLookupData> available) {
        LoadDataStore<BrokerLoadData> ls = store(load);
        LoadDataStore<TopBundlesLoadData> ts = store(top);
        BrokerRegistry reg = registry(available);
        InvocationHandler h = (proxy, m, args) -> {
            switch (m.getName()) {
                case "brokerConfiguration":
                    return conf;
                case "brokerLoadDataStore":
                    return ls;
                case "topBundleLoadDataStore":
                    return ts;
                case "brokerRegistry":
                    return reg;
                case "toString":
                    return "oracle context";
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                default:
                    throw new UnsupportedOperationException("LoadManagerContext." + m.getName());
            }
        };
        return (LoadManagerContext) Proxy.newProxyInstance(Ext.class.getClassLoader(),
                new Class<?>[]{LoadManagerContext.class}, h);
    }

    /** broker -> BrokerLoadData by Pulsar's Jackson mapping, {@code shift} ms added to each updatedAt. */
    static Map<String, BrokerLoadData> brokerLoad(ObjectMapper mapper, JsonNode obj, long shift) throws Exception {
        Map<String, BrokerLoadData> out = new ConcurrentHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = obj.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            ObjectNode d = e.getValue().deepCopy();
            if (shift != 0) {
                d.put("updatedAt", d.path("updatedAt").asLong(0) + shift);
            }
            out.put(e.getKey(), mapper.treeToValue(d, BrokerLoadData.class));
        }
        return out;
    }

    static Map<String, TopBundlesLoadData> topBundles(ObjectMapper mapper, JsonNode obj) throws Exception {
        Map<String, TopBundlesLoadData> out = new ConcurrentHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = obj.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), mapper.treeToValue(e.getValue(), TopBundlesLoadData.class));
        }
        return out;
    }

    /** broker -> BrokerLookupData by Pulsar's Jackson mapping (a HashMap, as the registry returns). */
    static Map<String, BrokerLookupData> lookup(ObjectMapper mapper, JsonNode obj) throws Exception {
        Map<String, BrokerLookupData> out = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = obj.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), mapper.treeToValue(e.getValue(), BrokerLookupData.class));
        }
        return out;
    }
}
