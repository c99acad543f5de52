using System.Collections.Frozen;
using System.Reflection;
using System.Reflection.Emit;
using System.Reflection.Metadata;
using System.Reflection.Metadata.Ecma335;
using System.Reflection.PortableExecutable;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>One call from compiled code into an SDK: who calls (the namespace of the calling type) and what.</summary>
public sealed record SdkCall(string CallerNamespace, string Namespace, string Type, string Member)
{
    public override string ToString() => $"{Type}.{Member}";
}

/// <summary>
/// The members of an SDK an assembly calls, read from its IL (call, callvirt, newobj, ldftn, ldvirtftn), so
/// what a service needs from Azure follows from the code it runs, not from a list someone keeps by hand.
/// </summary>
public static class SdkCalls
{
    private static readonly FrozenDictionary<short, OpCode> OpCodes = typeof(OpCodes)
        .GetFields(BindingFlags.Public | BindingFlags.Static)
        .Select(f => (OpCode)f.GetValue(null)!)
        .ToFrozenDictionary(o => o.Value);

    /// <summary>Every call <paramref name="assembly"/> makes to a type in <paramref name="sdkNamespace"/> (or a namespace below it).</summary>
    public static IReadOnlySet<SdkCall> Of(Assembly assembly, string sdkNamespace)
    {
        using var stream = File.OpenRead(assembly.Location);
        using var pe = new PEReader(stream);
        var metadata = pe.GetMetadataReader();
        var calls = new HashSet<SdkCall>();
        foreach (var typeHandle in metadata.TypeDefinitions)
        {
            var type = metadata.GetTypeDefinition(typeHandle);
            var caller = OutermostNamespace(metadata, type);
            foreach (var methodHandle in type.GetMethods())
            {
                var method = metadata.GetMethodDefinition(methodHandle);
                if (method.RelativeVirtualAddress == 0)
                {
                    continue;
                }

                foreach (var token in MethodTokens(pe.GetMethodBody(method.RelativeVirtualAddress)))
                {
                    if (Target(metadata, token) is { } target && InNamespace(target.Namespace, sdkNamespace))
                    {
                        calls.Add(new SdkCall(caller, target.Namespace, target.Type, target.Member));
                    }
                }
            }
        }

        return calls;
    }

    private static bool InNamespace(string candidate, string sdkNamespace) =>
        candidate == sdkNamespace || candidate.StartsWith(sdkNamespace + ".", StringComparison.Ordinal);

    /// <summary>The metadata tokens of the methods a body calls or takes the address of.</summary>
    private static IEnumerable<EntityHandle> MethodTokens(MethodBodyBlock body)
    {
        var il = body.GetILReader();
        while (il.RemainingBytes > 0)
        {
            short value = il.ReadByte();
            if (value == 0xFE)
            {
                value = unchecked((short)(0xFE00 | il.ReadByte()));
            }

            var opCode = OpCodes[value];
            if (opCode.OperandType == OperandType.InlineMethod)
            {
                yield return MetadataTokens.EntityHandle(il.ReadInt32());
                continue;
            }

            var operandSize = opCode.OperandType switch
            {
                OperandType.InlineNone => 0,
                OperandType.ShortInlineBrTarget or OperandType.ShortInlineI or OperandType.ShortInlineVar => 1,
                OperandType.InlineVar => 2,
                OperandType.InlineI8 or OperandType.InlineR => 8,
                OperandType.InlineSwitch => 4 * il.ReadInt32(),
                _ => 4,
            };
            il.Offset += operandSize;
        }
    }

    private static (string Namespace, string Type, string Member)? Target(MetadataReader metadata, EntityHandle token)
    {
        switch (token.Kind)
        {
            case HandleKind.MethodSpecification:
                return Target(metadata, metadata.GetMethodSpecification((MethodSpecificationHandle)token).Method);
            case HandleKind.MemberReference:
                var member = metadata.GetMemberReference((MemberReferenceHandle)token);
                return TypeName(metadata, member.Parent) is { } type ? (type.Namespace, type.Name, metadata.GetString(member.Name)) : null;
            default:
                // A method of the assembly itself: not an SDK call.
                return null;
        }
    }

    private static (string Namespace, string Name)? TypeName(MetadataReader metadata, EntityHandle handle)
    {
        switch (handle.Kind)
        {
            case HandleKind.TypeReference:
                var reference = metadata.GetTypeReference((TypeReferenceHandle)handle);
                if (reference.ResolutionScope.Kind == HandleKind.TypeReference)
                {
                    // A nested type: the namespace is its outer type's.
                    var outer = TypeName(metadata, (TypeReferenceHandle)reference.ResolutionScope);
                    return outer is { } o ? (o.Namespace, $"{o.Name}.{metadata.GetString(reference.Name)}") : null;
                }

                return (metadata.GetString(reference.Namespace), metadata.GetString(reference.Name));
            case HandleKind.TypeSpecification:
                // A generic instance: the generic type it instantiates.
                var blob = metadata.GetBlobReader(metadata.GetTypeSpecification((TypeSpecificationHandle)handle).Signature);
                if (blob.ReadSignatureTypeCode() != SignatureTypeCode.GenericTypeInstance)
                {
                    return null;
                }

                blob.ReadSignatureTypeCode();
                return TypeName(metadata, blob.ReadTypeHandle());
            default:
                return null;
        }
    }

    private static string OutermostNamespace(MetadataReader metadata, TypeDefinition type)
    {
        while (type.GetDeclaringType() is { IsNil: false } declaring)
        {
            type = metadata.GetTypeDefinition(declaring);
        }

        return metadata.GetString(type.Namespace);
    }
}
