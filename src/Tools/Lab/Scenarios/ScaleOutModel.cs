using System.Globalization;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>One input of a model, as printed beside its prediction.</summary>
internal sealed record ModelInput(string Name, string Value);

/// <summary>One limit a model considers: the rate at which it binds and how it was computed.</summary>
internal sealed record ModelLimit(string Name, double Rate, string How);

/// <summary>
/// What a model predicts for a step the machine cannot show, beside what was measured (null when
/// the step did not run). The prediction is the lowest of the limits.
/// </summary>
internal sealed record ModelPrediction(string StepId, string Quantity, string Unit, double Predicted, double? Measured, IReadOnlyList<ModelLimit> Limits, IReadOnlyList<ModelInput> Inputs)
{
    public ModelLimit Binding => Limits.MinBy(l => l.Rate)!;

    /// <summary>One line for the console and the verdict list.</summary>
    public string Summary =>
        string.Create(CultureInfo.InvariantCulture, $"{StepId} model (not a measurement): {Quantity} on the case study's cluster ≈ {Predicted:0} {Unit}, bound by {Binding.Name}; measured on this machine: {(Measured is { } m ? m.ToString("0.0", CultureInfo.InvariantCulture) + " " + Unit : "not run")}");
}

/// <summary>
/// Step B6 on the case study's cluster, which one machine cannot show: 12 nodes, workflow × 6 and
/// each backend × 9. From B5 — the step before it, CPU-bound — the model takes what one completed
/// message costs in CPU seconds in the workflow and in each backend (the lab's per-process CPU
/// sampling over the step ÷ messages completed) and the workflow's mean time per message; with B6's
/// replicas, concurrency and CPU limits it computes the completion rate at which each resource runs
/// out, and predicts the lowest:
/// <list type="bullet">
/// <item>the cluster's cores: nodes × cores per node ÷ the CPU seconds of one message in the workflow and the backends;</item>
/// <item>each component's pods: replicas × the pod's CPU limit ÷ that component's CPU seconds per message;</item>
/// <item>the workflow's concurrency: MaxConcurrentCalls × workflow replicas ÷ the time per message (Little's law).</item>
/// </list>
/// It assumes per-message cost does not change with scale and that Azure's services (not modelled)
/// keep up; the lab's own cost per message includes two cores' contention, so it errs low.
/// </summary>
internal static class ScaleOutModel
{
    /// <summary>The case study's cluster in step 6.</summary>
    internal const int Nodes = 12;

    /// <summary>
    /// Assumed: the case study does not give its node size. 2 is the size of infra/main.bicep's user
    /// nodes (Standard_D2s_v5, 2 vCPUs).
    /// </summary>
    internal const int CoresPerNode = 2;

    /// <summary>The components whose CPU a completed message costs: the workflow and the three backends.</summary>
    internal static readonly ServiceKind[] Components = [ServiceKind.Workflow, ServiceKind.Delivery, ServiceKind.Package, ServiceKind.DroneScheduler];

    /// <summary>The prediction for <paramref name="b6"/> from B5's figures, or null when B5 completed nothing or has no CPU samples.</summary>
    public static ModelPrediction? Predict(StepResult b5, Step b6, StepResult? measuredB6)
    {
        var completed = b5.Pipeline?.Completed ?? 0;
        var cost = Components.ToDictionary(c => c, c => b5.CpuSeconds(c.Name) / Math.Max(1, completed));
        var total = cost.Values.Sum();
        if (completed == 0 || total <= 0)
        {
            return null;
        }

        var limits = new List<ModelLimit>
        {
            new("the cluster's CPU", Nodes * CoresPerNode / total,
                Invariant($"{Nodes} nodes × {CoresPerNode} cores ÷ {total * 1000:0.0} ms CPU per message")),
        };
        foreach (var component in Components)
        {
            var replicas = b6.Replicas(component);
            var limit = CpuLimitCores(b6, component);
            limits.Add(new($"{component.Name} CPU", replicas * limit / Math.Max(1e-9, cost[component]),
                Invariant($"{replicas} pods × {limit:0.##} core ÷ {cost[component] * 1000:0.0} ms CPU per message")));
        }

        var concurrency = b6.Values.Int($"{ServiceKind.Workflow.ValuesKey}.settings.Processor.MaxConcurrentCalls") ?? 1;
        var workflowReplicas = b6.Replicas(ServiceKind.Workflow);
        // B5's time per message at the article's speed: its injected delays ran 1/scale as long here.
        if (b5.Pipeline!.MeanProcessSeconds * b5.Scale is { } seconds and > 0)
        {
            limits.Add(new("the workflow's concurrency", concurrency * workflowReplicas / seconds,
                Invariant($"{concurrency} concurrent calls × {workflowReplicas} replicas ÷ {seconds * 1000:0} ms per message")));
        }

        var inputs = new List<ModelInput>
        {
            new("from", Invariant($"B5 on this machine: {completed:N0} messages completed, CPU seconds {string.Join(", ", Components.Select(c => $"{c.Name} {b5.CpuSeconds(c.Name):0.0}"))}")),
            new("CPU per completed message", Invariant($"{string.Join(", ", Components.Select(c => $"{c.Name} {cost[c] * 1000:0.00} ms"))} (total {total * 1000:0.00} ms)")),
            new("workflow time per message", b5.Pipeline.MeanProcessSeconds is { } mean
                ? Invariant($"{mean * b5.Scale * 1000:0} ms (B5's mean with the emulated Service Bus and Cosmos DB latency{(b5.Scale == 1 ? string.Empty : $", {mean * 1000:0} ms at scale {b5.Scale:0.##} × {b5.Scale:0.##}")})")
                : "not measured"),
            new("B6 replicas", string.Join(", ", Components.Select(c => $"{c.Name} {b6.Replicas(c)}"))),
            new("B6 workflow concurrency", Invariant($"MaxConcurrentCalls {concurrency}")),
            new("pod CPU limit", string.Join(", ", Components.Select(c => Invariant($"{c.Name} {CpuLimitCores(b6, c):0.##} core")))),
            new("cluster", Invariant($"{Nodes} nodes (the case study's step 6) × {CoresPerNode} cores per node (assumed: the case study does not say; infra/main.bicep's Standard_D2s_v5)")),
        };
        return new ModelPrediction(b6.Id, "completions per second", "completions/s", limits.Min(l => l.Rate), measuredB6?.Pipeline?.MaxCompletionsPerSecond / measuredB6?.Scale, limits, inputs);
    }

    /// <summary>A pod's CPU limit in cores: the service's <c>resources.limits.cpu</c>, else <c>serviceDefaults</c>' (e.g. "1", "500m").</summary>
    internal static double CpuLimitCores(Step step, ServiceKind service)
    {
        var quantity = step.Setting($"{service.ValuesKey}.resources.limits.cpu") ?? step.Setting("serviceDefaults.resources.limits.cpu") ?? "1";
        return quantity.EndsWith('m')
            ? double.Parse(quantity[..^1], CultureInfo.InvariantCulture) / 1000
            : double.Parse(quantity, CultureInfo.InvariantCulture);
    }

    private static string Invariant(FormattableString text) => text.ToString(CultureInfo.InvariantCulture);
}
