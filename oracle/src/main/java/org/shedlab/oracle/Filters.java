package org.shedlab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.common.collect.BoundType;
import com.google.common.collect.Range;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.loadbalance.BrokerFilter;
import org.apache.pulsar.broker.loadbalance.LoadData;
import org.apache.pulsar.broker.loadbalance.ModularLoadManagerStrategy;
import org.apache.pulsar.broker.loadbalance.impl.BrokerLoadManagerClassFilter;
import org.apache.pulsar.broker.loadbalance.impl.BrokerVersionFilter;
import org.apache.pulsar.broker.loadbalance.impl.LoadManagerShared;
import org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl;
import org.apache.pulsar.broker.loadbalance.impl.SimpleResourceAllocationPolicies;
import org.apache.pulsar.broker.resources.LocalPoliciesResources;
import org.apache.pulsar.broker.resources.NamespaceResources;
import org.apache.pulsar.broker.resources.PulsarResources;
import org.apache.pulsar.common.naming.NamespaceBundle;
import org.apache.pulsar.common.naming.NamespaceBundleFactory;
import org.apache.pulsar.common.naming.NamespaceName;
import org.apache.pulsar.common.policies.data.LocalPolicies;
import org.apache.pulsar.common.policies.data.NamespaceIsolationDataImpl;
import org.apache.pulsar.common.policies.impl.NamespaceIsolationPolicies;
import org.apache.pulsar.policies.data.loadbalancer.BrokerData;
import org.apache.pulsar.policies.data.loadbalancer.BundleData;

/**
 * The "filters" case: the candidate filtering {@code ModularLoadManagerImpl.selectBrokerForAssignment} does before
 * (and, for the overload retry, after) the placement strategy, run by the line's own load manager class.
 *
 * <p>A case: {"kind": "filters", "conf": {broker.conf keys}, "data": LoadData JSON (with "preallocatedBundleData"),
 * "policies": {"namespaceIsolationPolicies": {name: NamespaceIsolationDataImpl JSON}, "antiAffinityGroups":
 * {namespace: group}, "failureDomains": {domain: {"brokers": [ids]}}}, "bundles": [bundle names, placed in
 * order]}. Answer: {"steps": [{"calls": [[candidates the strategy was handed, sorted], ...], "chosen": id or null}]}.
 *
 * <p>The load manager is Pulsar's class built by its own no-argument constructor; of what {@code initialize} sets
 * up, only what these paths read is set: the configuration, the resource-allocation policies (Pulsar's class over
 * a broker service whose metadata resources answer the case's isolation policies and anti-affinity groups), the
 * two broker filters {@code initialize} installs, the failure-domain map and the bundle-range cache as the leader's
 * {@code updateBundleData} fills them (reported bundles plus preallocations). The strategy is a recorder: it notes
 * the candidate set and picks the smallest broker name, so the filters, not a score, decide what is compared.
 */
final class Filters {
    private Filters() {
    }

    /** Notes every candidate set it is handed; picks the smallest name (deterministic). */
    static final class Recorder implements ModularLoadManagerStrategy {
        ArrayNode calls;

        @Override
        public Optional<String> selectBroker(Set<String> candidates, BundleData bundle, LoadData loadData,
                ServiceConfiguration conf) {
            TreeSet<String> s = new TreeSet<>(candidates);
            ArrayNode a = calls.addArray();
            s.forEach(a::add);
            return s.isEmpty() ? Optional.empty() : Optional.of(s.first());
        }
    }

    /** The cluster's isolation policies node: the case's policies, or absent. */
    static final class Isolation extends NamespaceResources.IsolationPolicyResources {
        Map<String, NamespaceIsolationDataImpl> data;

        Isolation() {
            super(null, 30);
        }

        @Override
        public Optional<NamespaceIsolationPolicies> getIsolationDataPolicies(String cluster) {
            return data == null ? Optional.empty() : Optional.of(new NamespaceIsolationPolicies(data));
        }

        @Override
        public CompletableFuture<Optional<NamespaceIsolationPolicies>> getIsolationDataPoliciesAsync(String c) {
            return CompletableFuture.completedFuture(getIsolationDataPolicies(c));
        }
    }

    /** Each namespace's local policies: its anti-affinity group, or no node. */
    static final class Locals extends LocalPoliciesResources {
        Map<String, String> groups;

        Locals() {
            super(null, 30);
        }

        @Override
        public CompletableFuture<Optional<LocalPolicies>> getLocalPoliciesAsync(NamespaceName ns) {
            String g = groups.get(ns.toString());
            return CompletableFuture.completedFuture(g == null ? Optional.empty()
                    : Optional.of(new LocalPolicies(null, null, g)));
        }
    }

    /** The broker service as these paths see it: its configuration and its metadata resources, nothing else
     * (never constructed: no field of Pulsar's class is read or reflected on). */
    static final class Service extends PulsarService {
        ServiceConfiguration conf;
        PulsarResources resources;

        Service() {
            super(null);
        }

        @Override
        public ServiceConfiguration getConfiguration() {
            return conf;
        }

        @Override
        public PulsarResources getPulsarResources() {
            return resources;
        }
    }

    private static void set(Object o, Class<?> k, String name, Object v) throws Exception {
        Field f = k.getDeclaredField(name);
        f.setAccessible(true);
        f.set(o, v);
    }

    private static Object get(Object o, String name) throws Exception {
        Field f = ModularLoadManagerImpl.class.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }

    private static <T> T blank(Class<T> k) throws Exception {
        Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        return k.cast(((sun.misc.Unsafe) f.get(null)).allocateInstance(k));
    }

    static NamespaceBundle bundle(String name, NamespaceBundleFactory factory) {
        int i = name.lastIndexOf('/');
        String[] r = name.substring(i + 1).split("_");
        long lo = Long.decode(r[0]);
        long hi = Long.decode(r[1]);
        Range<Long> range = Range.range(lo, BoundType.CLOSED, hi,
                hi == 0xFFFFFFFFL ? BoundType.CLOSED : BoundType.OPEN);
        return new NamespaceBundle(NamespaceName.get(name.substring(0, i)), range, factory);
    }

    static void answer(Driver d, JsonNode c, ServiceConfiguration conf, ObjectNode ans) throws Exception {
        ObjectMapper mapper = d.mapper();
        JsonNode pol = c.path("policies");

        Isolation iso = blank(Isolation.class);
        if (pol.has("namespaceIsolationPolicies")) {
            iso.data = new HashMap<>();
            Iterator<Map.Entry<String, JsonNode>> it = pol.path("namespaceIsolationPolicies").fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                iso.data.put(e.getKey(), mapper.treeToValue(e.getValue(), NamespaceIsolationDataImpl.class));
            }
        }
        Locals locals = blank(Locals.class);
        locals.groups = new HashMap<>();
        pol.path("antiAffinityGroups").fields().forEachRemaining(e -> locals.groups.put(e.getKey(),
                e.getValue().asText()));
        NamespaceResources nsr = blank(NamespaceResources.class);
        set(nsr, NamespaceResources.class, "isolationPolicies", iso);
        PulsarResources res = blank(PulsarResources.class);
        set(res, PulsarResources.class, "namespaceResources", nsr);
        set(res, PulsarResources.class, "localPolicies", locals);
        Service pulsar = blank(Service.class);
        pulsar.conf = conf;
        pulsar.resources = res;

        ModularLoadManagerImpl lm = new ModularLoadManagerImpl();
        try {
            Recorder rec = new Recorder();
            set(lm, ModularLoadManagerImpl.class, "pulsar", pulsar);
            set(lm, ModularLoadManagerImpl.class, "conf", conf);
            set(lm, ModularLoadManagerImpl.class, "policies", new SimpleResourceAllocationPolicies(pulsar));
            set(lm, ModularLoadManagerImpl.class, "placementStrategy", rec);
            @SuppressWarnings("unchecked")
            List<BrokerFilter> filters = (List<BrokerFilter>) get(lm, "filterPipeline");
            filters.add(new BrokerLoadManagerClassFilter());  // what initialize() installs, in its order
            filters.add(new BrokerVersionFilter());

            LoadData mine = (LoadData) get(lm, "loadData");
            LoadData given = d.loadData(c.path("data"));
            mine.getBrokerData().putAll(given.getBrokerData());
            mine.getBundleData().putAll(given.getBundleData());
            mine.getRecentlyUnloadedBundles().putAll(given.getRecentlyUnloadedBundles());

            @SuppressWarnings("unchecked")
            Map<String, String> domains = (Map<String, String>) get(lm, "brokerToFailureDomainMap");
            pol.path("failureDomains").fields().forEachRemaining(e -> e.getValue().path("brokers")
                    .forEach(b -> domains.put(b.asText(), e.getKey())));

            @SuppressWarnings("unchecked")
            Map<String, String> pre = (Map<String, String>) get(lm, "preallocatedBundleToBroker");
            Object ranges = get(lm, "brokerToNamespaceToBundleRange");
            for (Map.Entry<String, BrokerData> e : mine.getBrokerData().entrySet()) {
                Set<String> reported = e.getValue().getLocalData().getLastStats().keySet();
                Set<String> preallocated = e.getValue().getPreallocatedBundleData().keySet();
                preallocated.forEach(b -> pre.put(b, e.getKey()));
                fillRanges(ranges, e.getKey(), reported, preallocated);
            }

            NamespaceBundleFactory factory = Bundles.factory();
            ArrayNode steps = ans.putArray("steps");
            for (JsonNode b : c.path("bundles")) {
                ObjectNode o = steps.addObject();
                rec.calls = o.putArray("calls");
                Optional<String> got = assign(lm, bundle(b.asText(), factory));
                if (got.isPresent()) {
                    o.put("chosen", got.get());
                } else {
                    o.putNull("chosen");
                }
            }
        } finally {
            ((java.util.concurrent.ExecutorService) get(lm, "executors")).shutdownNow();
        }
    }

    /** {@code selectBrokerForAssignment} without its latency metric (a summary whose sketches library the oracle
     * does not load): a preallocated bundle keeps its broker, else Pulsar's {@code selectBroker} and, when it
     * chose one, its {@code preallocateBundle}. */
    @SuppressWarnings("unchecked")
    static Optional<String> assign(ModularLoadManagerImpl lm, NamespaceBundle bundle) throws Exception {
        String name = bundle.toString();
        Map<String, String> pre = (Map<String, String>) get(lm, "preallocatedBundleToBroker");
        if (pre.containsKey(name)) {
            return Optional.of(pre.get(name));
        }
        Method select = ModularLoadManagerImpl.class.getDeclaredMethod("selectBroker",
                org.apache.pulsar.common.naming.ServiceUnitId.class);
        select.setAccessible(true);
        Optional<String> got = (Optional<String>) select.invoke(lm, bundle);
        if (got.isPresent()) {
            Method p = ModularLoadManagerImpl.class.getDeclaredMethod("preallocateBundle", String.class, String.class);
            p.setAccessible(true);
            p.invoke(lm, name, got.get());
        }
        return got;
    }

    /** The bundle-range cache as {@code updateBundleData} fills it: a BundleRangeCache on the newer lines, a map of
     * maps (filled by {@code LoadManagerShared.fillNamespaceToBundlesMap}) on the older ones. */
    private static void fillRanges(Object ranges, String broker, Set<String> reported, Set<String> preallocated)
            throws Exception {
        for (Method m : ranges.getClass().getMethods()) {
            if (m.getName().equals("reloadFromBundles")) {
                m.invoke(ranges, broker, Stream.of(reported, preallocated).flatMap(Collection::stream));
                return;
            }
        }
        Method computeIfAbsent = null;
        for (Method m : ranges.getClass().getMethods()) {
            if (m.getName().equals("computeIfAbsent")) {
                computeIfAbsent = m;
            }
        }
        Class<?> mapClass = ranges.getClass();
        java.util.function.Function<Object, Object> make = k -> {
            try {
                Object builder = mapClass.getMethod("newBuilder").invoke(null);
                return builder.getClass().getMethod("build").invoke(builder);
            } catch (Exception x) {
                throw new IllegalStateException(x);
            }
        };
        Object nsMap = computeIfAbsent.invoke(ranges, broker, make);
        for (Method m : LoadManagerShared.class.getMethods()) {
            if (m.getName().equals("fillNamespaceToBundlesMap")) {
                m.invoke(null, reported, nsMap);
                m.invoke(null, preallocated, nsMap);
            }
        }
    }
}
