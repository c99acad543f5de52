using System.Globalization;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>
/// Batch requests: a POST to a container's docs with <c>x-ms-cosmos-is-batch-request: True</c> and a
/// JSON array of operations (the form the JavaScript SDK sends). With <c>x-ms-cosmos-batch-atomic:
/// True</c> it is a transactional batch in one logical partition: every operation succeeds or none is
/// written (the failing one carries its status, the others 424). With <c>False</c> it is a bulk
/// request: each operation succeeds or fails on its own, and operations the partition has no RU
/// budget left for are answered 429 with a retry-after, so the SDK retries only those.
/// </summary>
internal static partial class BatchHandlers
{
    /// <summary>The service's limit on operations in one batch request.</summary>
    public const int MaxOperations = 100;

    private const int FailedDependency = 424;

    public static GatewayResponse Execute(GatewayRequest request, ContainerResource container)
    {
        var atomic = !bool.TryParse(request.Header(CosmosHeaders.IsBatchAtomic), out var isAtomic) || isAtomic;
        var operation = atomic ? CosmosEmulatorOperations.Batch : CosmosEmulatorOperations.Bulk;
        try
        {
            return Execute(request, container, atomic, operation);
        }
        catch (BadRequestException e)
        {
            // Counted as the container's batch or bulk request that it is.
            var refused = GatewayResponse.BadRequest(e.Message, e.SubStatusCode).Named(operation);
            refused.Container = container;
            return refused;
        }
    }

    private static GatewayResponse Execute(GatewayRequest request, ContainerResource container, bool atomic, string operation)
    {
        // The JavaScript SDK sends a JSON array; the .NET SDK a RecordIO stream of HybridRow records,
        // and it expects its answer in the same form.
        var binary = !IsJsonArray(request.Body);
        List<BatchOperation> operations;
        if (binary)
        {
            operations = ReadHybridRowOperations(request.Body);
        }
        else
        {
            using var body = request.ParseJson(allowArray: true);
            operations = [.. body.RootElement.EnumerateArray().Select(BatchOperation.Parse)];
        }

        if (operations.Count == 0)
        {
            return GatewayResponse.BadRequest("The batch request did not have any operations to be executed.").Named(operation);
        }

        if (operations.Count > MaxOperations)
        {
            return GatewayResponse.BadRequest(
                $"Batch request has more operations than what is supported: {operations.Count} operations, at most {MaxOperations}.").Named(operation);
        }

        return atomic ? Transactional(request, container, operations, binary) : Bulk(request, container, operations, binary);
    }

    private static GatewayResponse Transactional(GatewayRequest request, ContainerResource container, List<BatchOperation> operations, bool binary)
    {
        const string operation = CosmosEmulatorOperations.Batch;
        var partitionKey = request.PartitionKey()
            ?? throw new BadRequestException("A transactional batch needs the partition key of its logical partition (x-ms-documentdb-partitionkey).");
        var epk = container.EffectivePartitionKeyOf(partitionKey);
        var partition = container.PartitionFor(epk);
        if (DataPlane.Admit(container, partition, operation) is { } throttled)
        {
            return throttled;
        }

        var outcomes = partition.Exclusive(() =>
        {
            // Evaluate every operation against the partition as the earlier ones leave it, and write
            // only when all of them succeed.
            var results = new Outcome[operations.Count];
            var pending = new Dictionary<DocumentKey, StoredDocument?>();
            var writes = new List<(DocumentKey Key, StoredDocument? Document)>();
            var failed = -1;
            for (var i = 0; i < operations.Count && failed < 0; i++)
            {
                var op = operations[i];
                Outcome outcome;
                if (op.Target(container, partitionKey) is { } mismatch)
                {
                    outcome = mismatch;
                }
                else
                {
                    var key = new DocumentKey(epk, op.Id(container));
                    var existing = pending.TryGetValue(key, out var staged) ? staged : partition.Read(key);
                    outcome = Evaluate(container, op, epk, existing);
                    if (outcome.Writes)
                    {
                        pending[key] = outcome.NewState;
                        writes.Add((key, outcome.NewState));
                    }
                }

                results[i] = outcome;
                if (outcome.Status >= 400)
                {
                    failed = i;
                }
            }

            if (failed < 0)
            {
                foreach (var (key, document) in writes)
                {
                    if (document is null)
                    {
                        partition.Delete(key, null);
                    }
                    else
                    {
                        partition.Write(key, WriteMode.Upsert, null, _ => document);
                    }
                }

                return results;
            }

            for (var i = 0; i < results.Length; i++)
            {
                if (i != failed)
                {
                    results[i] = Outcome.Failure(FailedDependency, "Failed dependency: another operation in the transactional batch failed.", charge: results[i]?.Charge ?? 0);
                }
            }

            return results;
        });

        var allSucceeded = outcomes.All(o => o.Status < 400);
        var response = Answer(outcomes, operations, allSucceeded ? 200 : 207, binary).Named(operation);
        var documents = allSucceeded ? outcomes.Count(o => o.Document is not null || o.Writes) : 0;
        return response.Charge(container, partition, outcomes.Sum(o => o.Charge), documents);
    }

    private static GatewayResponse Bulk(GatewayRequest request, ContainerResource container, List<BatchOperation> operations, bool binary)
    {
        const string operation = CosmosEmulatorOperations.Bulk;
        var headerKey = request.PartitionKey();
        var budgets = new Dictionary<PhysicalPartition, Budget>();
        var outcomes = new Outcome[operations.Count];
        var documents = 0;
        for (var i = 0; i < operations.Count; i++)
        {
            var op = operations[i];
            PartitionKeyValue partitionKey;
            string epk;
            try
            {
                partitionKey = op.PartitionKey() ?? headerKey ?? op.BodyPartitionKey(container)
                    ?? throw new BadRequestException("The operation names no partition key.");
                epk = container.EffectivePartitionKeyOf(partitionKey);
            }
            catch (BadRequestException e)
            {
                outcomes[i] = Outcome.Failure(400, e.Message, e.SubStatusCode);
                continue;
            }

            if (op.Target(container, partitionKey) is { } mismatch)
            {
                outcomes[i] = mismatch;
                continue;
            }

            var partition = container.PartitionFor(epk);
            if (!budgets.TryGetValue(partition, out var budget))
            {
                budget = new Budget(container, partition, queued: binary);
                budgets.Add(partition, budget);
            }

            if (!budget.TryAdmit(out var retryAfter))
            {
                outcomes[i] = Outcome.Throttled(retryAfter);
                continue;
            }

            var key = new DocumentKey(epk, op.Id(container));
            var outcome = partition.Exclusive(() =>
            {
                var result = Evaluate(container, op, epk, partition.Read(key));
                if (result.Writes)
                {
                    if (result.NewState is null)
                    {
                        partition.Delete(key, null);
                    }
                    else
                    {
                        partition.Write(key, WriteMode.Upsert, null, _ => result.NewState);
                    }
                }

                return result;
            });
            // Paid at once, so a concurrent request to this partition sees what this one has spent.
            container.Pool.Charge(partition.Index, outcome.Charge);
            budget.Spent += outcome.Charge;
            if (outcome.Status < 400)
            {
                documents++;
            }

            outcomes[i] = outcome;
        }

        if (!binary && budgets.Count > 0 && budgets.Values.All(b => b.Refused) && outcomes.All(o => o.Status == 429))
        {
            // No operation was admitted: the whole request is throttled, as a point operation would be.
            // (In the .NET SDK's form each operation keeps its own place in the partition's queue.)
            var first = budgets.Values.First();
            var throttled = GatewayResponse.TooManyRequests(first.RetryAfter).Named(operation);
            throttled.Container = container;
            foreach (var partition in budgets.Keys)
            {
                throttled.PartitionCharges.Add((partition, 0));
            }

            throttled.Latency = container.ThrottledLatency;
            return throttled;
        }

        var response = Answer(outcomes, operations, outcomes.All(o => o.Status < 400) ? 200 : 207, binary).Named(operation);
        response.BudgetsCharged = true;
        if (budgets.Count == 0)
        {
            response.Container = container;
            return response;
        }

        foreach (var (partition, budget) in budgets)
        {
            response.Charge(container, partition, budget.Spent, 0);
        }

        response.DocumentCount = documents;
        response.Latency = container.ServedLatency(1, documents);
        return response;
    }

    /// <summary>One operation against the item as it stands (null when absent); writes nothing itself.</summary>
    private static Outcome Evaluate(ContainerResource container, BatchOperation op, string epk, StoredDocument? existing)
    {
        var charges = container.Charges;
        var readCharge = charges.PointReadPerKilobyte;
        switch (op.Type)
        {
            case BatchOperationType.Read:
                if (existing is null)
                {
                    return Outcome.Failure(404, "Entity with the specified id does not exist in the system.", charge: readCharge);
                }

                var read = readCharge * DataPlane.Kilobytes(existing.Json.Length);
                // Not modified is not a failure: the batch goes on and commits, as in the service.
                return op.IfNoneMatch is not null && PhysicalPartition.ETagMatches(op.IfNoneMatch, existing.ETag)
                    ? new Outcome(304, null, read) { ETag = existing.ETag }
                    : new Outcome(200, existing, read);
            case BatchOperationType.Create:
                if (existing is not null)
                {
                    return Outcome.Failure(409, "Entity with the specified id already exists in the system.", charge: readCharge);
                }

                break;
            case BatchOperationType.Upsert:
                if (op.IfMatch is not null && existing is null)
                {
                    return Outcome.Failure(404, "Entity with the specified id does not exist in the system.", charge: readCharge);
                }

                break;
            default:
                if (existing is null)
                {
                    return Outcome.Failure(404, "Entity with the specified id does not exist in the system.", charge: readCharge);
                }

                break;
        }

        if ((op.IfMatch is not null && existing is not null && !PhysicalPartition.ETagMatches(op.IfMatch, existing.ETag))
            || (op.IfNoneMatch is not null && existing is not null && PhysicalPartition.ETagMatches(op.IfNoneMatch, existing.ETag)))
        {
            return Outcome.Failure(412, "Operation cannot be performed because one of the specified precondition is not met.", charge: readCharge);
        }

        if (op.Type == BatchOperationType.Delete)
        {
            return new Outcome(204, null, charges.WritePerKilobyte * DataPlane.Kilobytes(existing!.Json.Length)) { Writes = true };
        }

        StoredDocument document;
        if (op.Type == BatchOperationType.Patch)
        {
            var patch = ItemPatch.Parse(op.Body ?? throw new BadRequestException("A patch operation needs a resourceBody with its operations."));
            try
            {
                using var patched = patch.Apply(existing!);
                if (container.EffectivePartitionKeyOf(container.PartitionKeyOf(patched.RootElement)) != epk)
                {
                    return Outcome.Failure(400, "A patch cannot change the partition key of an item.");
                }

                document = DocumentBuilder.Build(container, patched.RootElement, existing!.Id, epk, existing);
            }
            catch (ItemPatch.ConditionNotMetException)
            {
                return Outcome.Failure(412, "Operation cannot be performed because one of the specified precondition is not met.", charge: readCharge);
            }
            catch (BadRequestException e)
            {
                return Outcome.Failure(400, e.Message, e.SubStatusCode);
            }
        }
        else
        {
            document = DocumentBuilder.Build(container, op.Body!.Value, op.Id(container), epk, existing);
        }

        var status = existing is null ? 201 : 200;
        return new Outcome(status, document, charges.WritePerKilobyte * DataPlane.Kilobytes(document.Json.Length)) { Writes = true, NewState = document };
    }

    private static GatewayResponse Answer(IReadOnlyList<Outcome> outcomes, List<BatchOperation> operations, int statusCode, bool binary) =>
        binary ? WriteHybridRowResults(outcomes, operations, statusCode) : GatewayResponse.Json(statusCode, writer =>
        {
            writer.WriteStartArray();
            for (var i = 0; i < outcomes.Count; i++)
            {
                var outcome = outcomes[i];
                writer.WriteStartObject();
                writer.WriteNumber("statusCode", outcome.Status);
                if (outcome.SubStatus != 0)
                {
                    writer.WriteNumber("subStatusCode", outcome.SubStatus);
                }

                writer.WriteNumber("requestCharge", Math.Round(outcome.Charge, 2));
                if (outcome.ETag is { } etag)
                {
                    writer.WriteString("eTag", etag);
                }

                if (outcome.Document is { } document)
                {
                    if (!operations[i].Minimal || operations[i].Type == BatchOperationType.Read)
                    {
                        writer.WritePropertyName("resourceBody");
                        writer.WriteRawValue(document.Json, skipInputValidation: true);
                    }
                }

                if (outcome.RetryAfter > 0)
                {
                    writer.WriteNumber("retryAfterMilliseconds", outcome.RetryAfter);
                }

                if (outcome.Message is { } message)
                {
                    writer.WriteString("message", message);
                }

                writer.WriteEndObject();
            }

            writer.WriteEndArray();
        }, 256 * outcomes.Count);

    private static bool IsJsonArray(byte[] body)
    {
        foreach (var b in body)
        {
            if (b is (byte)' ' or (byte)'\t' or (byte)'\r' or (byte)'\n')
            {
                continue;
            }

            return b == (byte)'[';
        }

        return false;
    }

    /// <summary>What one operation came to: its status, the item to answer with and its RU charge.</summary>
    private sealed record Outcome(int Status, StoredDocument? Document, double Charge)
    {
        /// <summary>The item's etag in the answer: the document's, or the unchanged item's for a 304.</summary>
        public string? ETag { get; init; } = Document?.ETag;

        public int SubStatus { get; init; }

        public string? Message { get; init; }

        public int RetryAfter { get; init; }

        /// <summary>True when the operation changes the item: <see cref="NewState"/> is stored (null deletes it).</summary>
        public bool Writes { get; init; }

        public StoredDocument? NewState { get; init; }

        public static Outcome Failure(int status, string message, int subStatus = 0, double charge = 0) =>
            new(status, null, charge) { SubStatus = subStatus, Message = message };

        public static Outcome Throttled(int retryAfter) =>
            new(429, null, 0)
            {
                SubStatus = SubStatusCodes.RequestRateTooLarge,
                RetryAfter = retryAfter,
                Message = "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later.",
            };
    }

    /// <summary>
    /// A partition's RU budget during one bulk request. Each operation is admitted while the partition
    /// has budget left at that moment and pays its charge at once, so concurrent requests to one
    /// partition share its budget; once it is spent, the remaining operations are told to come back later.
    /// </summary>
    /// <remarks>
    /// The two SDKs retry throttled bulk operations differently, so the retry-after depends on the
    /// form of the request. The JavaScript SDK sleeps each throttled operation's retry-after one
    /// after another before re-queuing it, which already spaces them out: every operation gets the
    /// time to repay the partition's debt and to afford one more write, and a request of which no
    /// operation is admitted is throttled as a whole, as a point operation would be. The .NET SDK waits
    /// each operation's retry-after concurrently (at most 9 times, 30 s in all), so in its binary form
    /// throttled operations queue up per partition: the n-th still waiting is told to come back when
    /// the partition will have earned the RU for the writes before it, as the service spaces out
    /// throttled requests, instead of all returning at once to be throttled again.
    /// </remarks>
    private sealed class Budget(ContainerResource container, PhysicalPartition partition, bool queued)
    {
        private bool _started;

        public double Spent { get; set; }

        /// <summary>True when the request was refused at its first operation for this partition (JSON form).</summary>
        public bool Refused { get; private set; }

        public int RetryAfter { get; private set; }

        public bool TryAdmit(out int retryAfter)
        {
            var pool = container.Pool;
            if (!queued && !_started)
            {
                _started = true;
                if (!pool.TryAdmit(partition.Index, out var requestRetryAfter))
                {
                    Refused = true;
                    RetryAfter = requestRetryAfter;
                }
            }

            if (Refused)
            {
                retryAfter = RetryAfter;
                return false;
            }

            return pool.TryAdmitOperation(partition.Index, container.Charges.WritePerKilobyte, queued, out retryAfter);
        }
    }

    private enum BatchOperationType
    {
        Create,
        Upsert,
        Read,
        Replace,
        Delete,
        Patch,
    }

    /// <summary>One element of the request's array: <c>{operationType, id, partitionKey, ifMatch, ifNoneMatch, resourceBody}</c>.</summary>
    private sealed class BatchOperation
    {
        private static readonly string[] JsonFields = ["operationType", "id", "partitionKey", "ifMatch", "ifNoneMatch", "resourceBody"];

        public BatchOperationType Type { get; private init; }

        public string? ItemId { get; private init; }

        public string? PartitionKeyJson { get; private init; }

        public string? IfMatch { get; private init; }

        public string? IfNoneMatch { get; private init; }

        public JsonElement? Body { get; private init; }

        /// <summary>The client asked for no item in the answer to a write (<c>Prefer: return=minimal</c>).</summary>
        public bool Minimal { get; private init; }

        public static BatchOperation Parse(JsonElement element)
        {
            if (element.ValueKind != JsonValueKind.Object)
            {
                throw new BadRequestException("Every element of a batch request must be an operation object.");
            }

            // A field the emulator does not model (a time to live, an indexing directive, …) is refused
            // rather than ignored: the operation would not do what its sender asked.
            foreach (var property in element.EnumerateObject())
            {
                if (!JsonFields.Contains(property.Name))
                {
                    throw new BadRequestException(
                        $"The batch operation field '{property.Name}' is not supported by this emulator (supported: {string.Join(", ", JsonFields)}).");
                }
            }

            var typeName = String(element, "operationType")
                ?? throw new BadRequestException("A batch operation needs an operationType.");
            // Enum.TryParse also takes numbers and comma-separated lists ("Delete,Read"); neither names an operation.
            if (!Enum.TryParse<BatchOperationType>(typeName, ignoreCase: true, out var type) || !Enum.IsDefined(type)
                || typeName.Contains(',', StringComparison.Ordinal) || int.TryParse(typeName, CultureInfo.InvariantCulture, out _))
            {
                throw new BadRequestException($"The batch operation type '{typeName}' is not supported (Create, Upsert, Read, Replace, Delete, Patch).");
            }

            JsonElement? body = element.TryGetProperty("resourceBody", out var resource) && resource.ValueKind != JsonValueKind.Null
                ? resource.Clone()
                : null;
            return Create(
                type,
                String(element, "id"),
                element.TryGetProperty("partitionKey", out var pk) ? pk.ValueKind == JsonValueKind.String ? pk.GetString() : pk.GetRawText() : null,
                String(element, "ifMatch"),
                String(element, "ifNoneMatch"),
                body,
                minimal: false);
        }

        public static BatchOperation Create(
            BatchOperationType type, string? id, string? partitionKeyJson, string? ifMatch, string? ifNoneMatch, JsonElement? body, bool minimal)
        {
            var operation = new BatchOperation
            {
                Type = type,
                ItemId = id,
                PartitionKeyJson = partitionKeyJson,
                IfMatch = ifMatch,
                IfNoneMatch = ifNoneMatch,
                Body = body,
                Minimal = minimal,
            };
            if (type is BatchOperationType.Create or BatchOperationType.Upsert or BatchOperationType.Replace)
            {
                if (body is not { ValueKind: JsonValueKind.Object })
                {
                    throw new BadRequestException($"A {type} operation needs a resourceBody object.");
                }

                MetadataHandlers.RequireId(body.Value);
            }
            else if (operation.ItemId is null)
            {
                throw new BadRequestException($"A {type} operation needs the id of its item.");
            }

            return operation;
        }

        public string Id(ContainerResource container) =>
            Type is BatchOperationType.Create or BatchOperationType.Upsert or BatchOperationType.Replace
                ? MetadataHandlers.RequireId(Body!.Value)
                : ItemId!;

        /// <summary>The operation's own partition key (a JSON array in a string), or null.</summary>
        public PartitionKeyValue? PartitionKey()
        {
            if (PartitionKeyJson is null)
            {
                return null;
            }

            return PartitionKeyValue.TryParseHeader(PartitionKeyJson, out var value, out var error)
                ? value
                : throw new BadRequestException(error!);
        }

        public PartitionKeyValue? BodyPartitionKey(ContainerResource container) =>
            Body is { ValueKind: JsonValueKind.Object } body && Type is not BatchOperationType.Patch ? container.PartitionKeyOf(body) : null;

        /// <summary>A 400 outcome when the operation belongs to another logical partition than <paramref name="partitionKey"/>.</summary>
        public Outcome? Target(ContainerResource container, PartitionKeyValue partitionKey)
        {
            try
            {
                if (PartitionKey() is { } own && !own.Equals(partitionKey))
                {
                    return Outcome.Failure(400,
                        $"The operation's partition key {own} is not the batch's partition key {partitionKey}: a transactional batch is limited to one logical partition.",
                        SubStatusCodes.PartitionKeyMismatch);
                }

                if (BodyPartitionKey(container) is { } fromBody && !fromBody.Equals(partitionKey))
                {
                    return Outcome.Failure(400,
                        $"PartitionKey extracted from document doesn't match the one specified in the header: the item has {fromBody} at {container.PartitionKey}, the batch is for {partitionKey}.",
                        SubStatusCodes.PartitionKeyMismatch);
                }
            }
            catch (BadRequestException e)
            {
                return Outcome.Failure(400, e.Message, e.SubStatusCode);
            }

            return null;
        }

        private static string? String(JsonElement element, string name) =>
            element.TryGetProperty(name, out var value) && value.ValueKind == JsonValueKind.String ? value.GetString() : null;
    }
}
