using System.Globalization;
using System.Net;
using System.Text.RegularExpressions;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>
/// The closest this machine gets to installing a render on a cluster: every Deployment of the
/// render runs as the process its image would start, with the rendered arguments, environment,
/// Secrets, ConfigMaps and ports, and Service names resolved to 127.0.0.1 the way cluster DNS and
/// kube-proxy would route them. What cannot be mapped (an image with no local program, an
/// address no Service exposes, a probe kind with no local equivalent) fails the rehearsal, since a
/// pod would fail there too.
/// </summary>
public sealed partial class Rehearsal : IAsyncDisposable
{
    private static readonly TimeSpan StartupDeadline = TimeSpan.FromMinutes(3);
    private static readonly TimeSpan MinimumProbeTimeout = TimeSpan.FromSeconds(10);

    private readonly List<Pod> _pods = [];
    private readonly string _directory;

    private Rehearsal(string directory) => _directory = directory;

    /// <summary>One Deployment's single replica.</summary>
    public sealed record Pod(string Name, IDictionary<object, object?> Container, IReadOnlyDictionary<string, int> LocalPorts, LocalProcess Process, IReadOnlyDictionary<string, string> Environment);

    public IReadOnlyList<Pod> Pods => _pods;

    /// <summary>Starts one replica of every Deployment of <paramref name="render"/>.</summary>
    public static async Task<Rehearsal> StartAsync(Render render)
    {
        var rehearsal = new Rehearsal(Directory.CreateTempSubdirectory("dronedelivery-rehearsal-").FullName);
        try
        {
            var deployments = render.OfKind("Deployment").ToList();
            var localPorts = deployments.ToDictionary(d => d.Name, d => (IReadOnlyDictionary<string, int>)d.Containers.Single().List("ports")
                .OfType<IDictionary<object, object?>>()
                .ToDictionary(p => p.Text("containerPort")!, _ => FreePort.NextOutsideEphemeralRange()));
            var network = ServiceNetwork(render, deployments, localPorts);
            var starts = deployments.Select(d => rehearsal.StartPodAsync(render, d, localPorts[d.Name], network)).ToList();
            try
            {
                rehearsal._pods.AddRange(await Task.WhenAll(starts));
            }
            catch
            {
                // Stop whatever did start before reporting the first failure.
                foreach (var started in starts.Where(s => s.IsCompletedSuccessfully))
                {
                    await started.Result.Process.DisposeAsync();
                }

                throw;
            }

            return rehearsal;
        }
        catch
        {
            await rehearsal.DisposeAsync();
            throw;
        }
    }

    /// <summary>
    /// What tells two renders' rehearsals apart: the render without its Deployments' replica counts (one
    /// replica of each is rehearsed) and with the development issuer's signing key, random in every
    /// render, as a placeholder. Renders with the same equivalence rehearse the same processes.
    /// </summary>
    public static string Equivalence(Render render) =>
        SigningKey().Replace(ReplicaCount().Replace(render.Text, string.Empty), "${key}<random>");

    [GeneratedRegex(@"^  replicas: \d+\r?\n", RegexOptions.Multiline)]
    private static partial Regex ReplicaCount();

    [GeneratedRegex(@"^(?<key>  signing-key: ).*$", RegexOptions.Multiline)]
    private static partial Regex SigningKey();

    /// <summary>
    /// Polls the startup, liveness and readiness probes in turn, as the kubelet would, until each
    /// passes; a pod whose probe never passes within the deadline, or that exits, fails. Returns
    /// what went wrong, or null.
    /// </summary>
    public static async Task<string?> ProbeAsync(Pod pod)
    {
        var deadline = DateTime.UtcNow + StartupDeadline;
        foreach (var kind in new[] { "startupProbe", "livenessProbe", "readinessProbe" })
        {
            if (pod.Container.Map(kind) is not { } probe)
            {
                continue;
            }

            string? last;
            do
            {
                if (pod.Process.Exited.IsCompleted)
                {
                    return $"{pod.Name} exited with code {pod.Process.Exited.Result} before its {kind} passed:\n{string.Join('\n', pod.Process.RecentOutput)}";
                }

                last = await RunProbeAsync(pod, probe);
                if (last is null)
                {
                    break;
                }

                await Task.Delay(TimeSpan.FromMilliseconds(250));
            }
            while (DateTime.UtcNow < deadline);

            if (last is not null)
            {
                return $"{pod.Name}: the {kind} did not pass within {StartupDeadline.TotalMinutes} minutes: {last}\n{string.Join('\n', pod.Process.RecentOutput)}";
            }
        }

        return null;
    }

    public async ValueTask DisposeAsync()
    {
        await Task.WhenAll(_pods.Select(p => p.Process.DisposeAsync().AsTask()));
        try
        {
            Directory.Delete(_directory, recursive: true);
        }
        catch (IOException)
        {
            // A process may still be closing a file in it; the temporary folder is cleaned up later.
        }
    }

    private async Task<Pod> StartPodAsync(Render render, Manifest deployment, IReadOnlyDictionary<string, int> ports, ServiceAddresses network)
    {
        var container = deployment.Containers.Single();
        var mounts = MountVolumes(render, deployment, container);
        string Local(string value) => MapPaths(network.Resolve(value), mounts);

        var image = container.Text("image")!;
        var program = ImagePrograms.For(image, container.List("command").Select(c => c!.ToString()!).ToList());
        var arguments = container.List("args").Select(a => a!.ToString()!)
            .Select(a => ports.TryGetValue(a, out var port) ? port.ToString(CultureInfo.InvariantCulture) : a == "0.0.0.0" ? "127.0.0.1" : Local(a))
            .ToList();

        // The image's own ENV first, then the pod's; the test host's hosting environment is not the pod's.
        var environment = new Dictionary<string, string?>
        {
            ["ASPNETCORE_ENVIRONMENT"] = null,
            ["DOTNET_ENVIRONMENT"] = null,
            ["ASPNETCORE_URLS"] = null,
        };
        foreach (var (name, value) in program.ImageEnvironment.Concat(Render.Environment(container)))
        {
            if (OptionalSecretAbsent(render, value))
            {
                continue; // as on a cluster: an optional key the Secret lacks sets no variable
            }

            environment[name] = name.EndsWith("_PORTS", StringComparison.Ordinal) || name.EndsWith("_PORT", StringComparison.Ordinal)
                ? string.Join(';', value.Split(';').Select(p => ports.TryGetValue(p, out var local) ? local.ToString(CultureInfo.InvariantCulture) : p))
                : Local(ResolveReference(render, deployment, value));
        }

        var spec = new LocalProcessSpec
        {
            Name = deployment.Name,
            FileName = program.FileName,
            Arguments = [.. program.Arguments, .. arguments],
            Environment = environment,
            WorkingDirectory = _directory,
        };
        var process = await LocalProcess.StartAsync(spec);
        return new Pod(deployment.Name, container, ports, process, environment.Where(e => e.Value is not null).ToDictionary(e => e.Key, e => e.Value!));
    }

    /// <summary>An optional reference to a key the rendered Secret does not have.</summary>
    internal static bool OptionalSecretAbsent(Render render, string value)
    {
        if (!value.StartsWith("secret?:", StringComparison.Ordinal))
        {
            return false;
        }

        var (name, key) = (value["secret?:".Length..].Split('/')[0], value["secret?:".Length..].Split('/')[1]);
        var secret = render.Manifests.SingleOrDefault(m => m.Kind == "Secret" && m.Name == name);
        return secret is null || (secret.Body.Text("stringData", key) is null && secret.Body.Text("data", key) is null);
    }

    private static string ResolveReference(Render render, Manifest deployment, string value)
    {
        if (value.StartsWith("secret:", StringComparison.Ordinal) || value.StartsWith("secret?:", StringComparison.Ordinal))
        {
            var reference = value[(value.IndexOf(':', StringComparison.Ordinal) + 1)..];
            var (name, key) = (reference.Split('/')[0], reference.Split('/')[1]);
            var secret = render.Manifests.SingleOrDefault(m => m.Kind == "Secret" && m.Name == name)
                ?? throw new InvalidOperationException($"{deployment.Id} reads Secret {name}, which the render does not create.");
            return secret.Body.Text("stringData", key)
                ?? (secret.Body.Text("data", key) is { } encoded ? System.Text.Encoding.UTF8.GetString(Convert.FromBase64String(encoded)) : null)
                ?? throw new InvalidOperationException($"{deployment.Id} reads key {key} of Secret {name}, which has no such key.");
        }

        return value == "field:metadata.name" ? $"{deployment.Name}-rehearsal-0"
            : value.StartsWith("field:", StringComparison.Ordinal) ? throw new InvalidOperationException($"{deployment.Id}: no local value for {value}.")
            : value;
    }

    /// <summary>ConfigMap volumes become folders holding their files; emptyDir volumes become empty folders.</summary>
    private Dictionary<string, string> MountVolumes(Render render, Manifest deployment, IDictionary<object, object?> container)
    {
        var volumes = deployment.PodSpec.List("volumes").OfType<IDictionary<object, object?>>().ToDictionary(v => v.Text("name")!);
        var mounts = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var mount in container.List("volumeMounts").OfType<IDictionary<object, object?>>())
        {
            var volume = volumes[mount.Text("name")!];
            var folder = Path.Combine(_directory, deployment.Name, mount.Text("name")!);
            Directory.CreateDirectory(folder);
            if (volume.Map("configMap") is { } configMap)
            {
                var data = render.Get("ConfigMap", configMap.Text("name")!).Body.Map("data") ?? new Dictionary<object, object?>();
                foreach (var (file, content) in data)
                {
                    File.WriteAllText(Path.Combine(folder, file.ToString()!), content?.ToString());
                }
            }
            else if (volume.Map("emptyDir") is null)
            {
                throw new InvalidOperationException($"{deployment.Id} mounts volume {mount.Text("name")}, of a kind with no local equivalent.");
            }

            mounts[mount.Text("mountPath")!.TrimEnd('/')] = folder;
        }

        return mounts;
    }

    private static string MapPaths(string value, IReadOnlyDictionary<string, string> mounts)
    {
        foreach (var (mountPath, folder) in mounts.OrderByDescending(m => m.Key.Length))
        {
            if (value == mountPath || value.StartsWith(mountPath + "/", StringComparison.Ordinal))
            {
                return folder + value[mountPath.Length..];
            }
        }

        return value;
    }

    private static ServiceAddresses ServiceNetwork(Render render, List<Manifest> deployments, Dictionary<string, IReadOnlyDictionary<string, int>> localPorts)
    {
        var routes = new Dictionary<(string Service, int Port), int>();
        foreach (var service in render.OfKind("Service"))
        {
            var selector = service.Body.Map("spec", "selector") ?? new Dictionary<object, object?>();
            var target = deployments.SingleOrDefault(d => selector.All(s => d.Body.Text("spec", "template", "metadata", "labels", s.Key.ToString()!) == s.Value?.ToString()));
            if (target is null)
            {
                continue;
            }

            var containerPorts = target.Containers.Single().List("ports").OfType<IDictionary<object, object?>>().ToList();
            foreach (var port in service.Body.List("spec", "ports").OfType<IDictionary<object, object?>>())
            {
                var targetPort = port.Text("targetPort") ?? port.At("targetPort")?.ToString() ?? port.Text("port")!;
                var containerPort = containerPorts.SingleOrDefault(p => p.Text("name") == targetPort || p.Text("containerPort") == targetPort)?.Text("containerPort")
                    ?? throw new InvalidOperationException($"{service.Id} targets port {targetPort}, which {target.Id} does not declare.");
                routes[(service.Name, int.Parse(port.Text("port")!, CultureInfo.InvariantCulture))] = localPorts[target.Name][containerPort];
            }
        }

        return new ServiceAddresses(routes);
    }

    private static async Task<string?> RunProbeAsync(Pod pod, IDictionary<object, object?> probe)
    {
        var timeout = TimeSpan.FromSeconds(Math.Max(MinimumProbeTimeout.TotalSeconds, double.Parse(probe.Text("timeoutSeconds") ?? "1", CultureInfo.InvariantCulture)));
        if (probe.Map("httpGet") is { } httpGet)
        {
            var port = httpGet.Text("port")!;
            var containerPort = pod.Container.List("ports").OfType<IDictionary<object, object?>>().SingleOrDefault(p => p.Text("name") == port || p.Text("containerPort") == port)?.Text("containerPort")
                ?? throw new InvalidOperationException($"{pod.Name}: the probe's port {port} is not a container port.");
            using var http = new HttpClient { Timeout = timeout };
            try
            {
                using var response = await http.GetAsync(new Uri($"http://127.0.0.1:{pod.LocalPorts[containerPort]}{httpGet.Text("path")}"));
                var status = (int)response.StatusCode;
                return status is >= 200 and < 400 ? null : $"GET {httpGet.Text("path")} answered {status}: {await response.Content.ReadAsStringAsync()}";
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
            {
                return $"GET {httpGet.Text("path")} failed: {e.Message}";
            }
        }

        if (probe.List("exec", "command").Select(c => c!.ToString()!).ToList() is [var tool, .. var rest] && tool == "redis-cli")
        {
            // Inside the pod redis-cli reaches the server on its default port; here it is told the mapped one.
            var server = ImagePrograms.RedisCli();
            var result = ExternalTool.Run(server, ["-h", "127.0.0.1", "-p", pod.LocalPorts.Single().Value.ToString(CultureInfo.InvariantCulture), .. rest]);
            return result.ExitCode == 0 && result.StandardOutput.Trim() == "PONG" ? null : $"redis-cli {string.Join(' ', rest)}: {result.Describe()}";
        }

        throw new InvalidOperationException($"{pod.Name}: no local equivalent for the probe {string.Join(", ", probe.Keys)}.");
    }

    /// <summary>Cluster DNS and kube-proxy: <c>service[.namespace[.svc[.cluster.local]]][:port]</c> → 127.0.0.1 and the pod's local port.</summary>
    private sealed partial class ServiceAddresses(IReadOnlyDictionary<(string Service, int Port), int> routes)
    {
        private readonly HashSet<string> _services = routes.Keys.Select(k => k.Service).ToHashSet(StringComparer.Ordinal);

        public string Resolve(string value) => Address().Replace(value, match =>
        {
            var host = match.Groups["host"].Value;
            if (!_services.Contains(host))
            {
                return match.Value;
            }

            var scheme = match.Groups["scheme"].Value;
            int port;
            if (match.Groups["port"].Success)
            {
                port = int.Parse(match.Groups["port"].Value, CultureInfo.InvariantCulture);
            }
            else if (scheme is "http://" or "https://")
            {
                port = scheme == "http://" ? 80 : 443;
            }
            else
            {
                return match.Value;
            }

            return routes.TryGetValue((host, port), out var local)
                ? $"{scheme}127.0.0.1:{local.ToString(CultureInfo.InvariantCulture)}"
                : throw new InvalidOperationException($"'{value}' addresses {host}:{port}, which Service {host} does not expose.");
        });

        [GeneratedRegex($@"(?<![\w.-])(?<scheme>[a-z][a-z0-9+.-]*://)?(?<host>[a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.{Chart.Namespace}(\.svc(\.cluster\.local)?)?)?(:(?<port>\d+))?(?![\w.-])")]
        private static partial Regex Address();
    }

    /// <summary>What each image runs: this repository's images (k8s/build-images.sh names them and their projects) and Redis.</summary>
    private static partial class ImagePrograms
    {
        private static readonly Lazy<IReadOnlyDictionary<string, string>> Projects = new(ReadBuildScript);
        private static readonly Lazy<IReadOnlyList<KeyValuePair<string, string>>> DockerfileEnvironment = new(ReadDockerfileEnvironment);

        public sealed record Program(string FileName, IReadOnlyList<string> Arguments, IEnumerable<KeyValuePair<string, string>> ImageEnvironment);

        public static Program For(string image, IReadOnlyList<string> command)
        {
            var repository = image.Split('@')[0];
            repository = repository[..(repository.LastIndexOf(':') is var colon and > 0 && colon > repository.LastIndexOf('/') ? colon : repository.Length)];
            var name = repository[(repository.LastIndexOf('/') + 1)..];
            if (repository.EndsWith("/redis", StringComparison.Ordinal) && command is ["redis-server"])
            {
                return new Program(RedisServer.FindExecutable(), [], []);
            }

            if (!Projects.Value.TryGetValue(name, out var project) || command.Count > 0)
            {
                throw new InvalidOperationException($"No local program for image {image} (command [{string.Join(' ', command)}]); k8s/build-images.sh builds {string.Join(", ", Projects.Value.Keys)}.");
            }

            var assembly = RepositoryLayout.ProjectAssembly(Path.GetFileNameWithoutExtension(
                Directory.GetFiles(RepositoryLayout.InRepository(["src", .. project.Split('/')]), "*.csproj").Single()));
            if (!File.Exists(assembly))
            {
                throw new FileNotFoundException($"'{assembly}' does not exist; build the solution first.", assembly);
            }

            return new Program("dotnet", [assembly], DockerfileEnvironment.Value);
        }

        public static string RedisCli() => Path.Combine(Path.GetDirectoryName(RedisServer.FindExecutable())!, "redis-cli");

        /// <summary>The <c>"name:Project/Folder"</c> entries of the build script's images array.</summary>
        private static IReadOnlyDictionary<string, string> ReadBuildScript() =>
            BuildScriptEntry().Matches(File.ReadAllText(RepositoryLayout.InRepository("k8s", "build-images.sh")))
                .ToDictionary(m => m.Groups["name"].Value, m => m.Groups["project"].Value);

        /// <summary>The runtime stage's ENV of src/Dockerfile (the last ENV instruction, with continuation lines).</summary>
        private static IReadOnlyList<KeyValuePair<string, string>> ReadDockerfileEnvironment()
        {
            var text = File.ReadAllText(RepositoryLayout.InRepository("src", "Dockerfile")).Replace("\\\n", " ", StringComparison.Ordinal);
            var line = text.Split('\n').Last(l => l.StartsWith("ENV ", StringComparison.Ordinal));
            return line["ENV ".Length..].Split(' ', StringSplitOptions.RemoveEmptyEntries)
                .Select(p => p.Split('=', 2))
                .Select(p => KeyValuePair.Create(p[0], p[1]))
                .ToList();
        }

        [GeneratedRegex(@"^\s*""(?<name>[a-z0-9-]+):(?<project>[A-Za-z/]+)""\s*$", RegexOptions.Multiline)]
        private static partial Regex BuildScriptEntry();
    }
}
