// `type` is a string on every member of every open union, and narrowing on it still types each
// member alone. test_typescript.py compiles this under `tsc --strict` and checks that OPEN_UNIONS
// names every union of the declarations that has an Unknown* member.
import type {
  Annotation,
  AssistantMessageItemParamContentPart,
  FunctionCallOutputItemParamOutputPart,
  FunctionCallOutputOutputPart,
  ItemField,
  ItemParam,
  MessageContentPart,
  ReasoningBodyContentPart,
  ResponsesToolParam,
  StreamingEvent,
  SystemMessageItemParamContentPart,
  Tool,
  UnknownItem,
  UnknownType,
  UserMessageItemParamContentPart,
} from "openresponses-runtime";

type OPEN_UNIONS = [
  Annotation,
  AssistantMessageItemParamContentPart,
  FunctionCallOutputItemParamOutputPart,
  FunctionCallOutputOutputPart,
  ItemField,
  ItemParam,
  MessageContentPart,
  ReasoningBodyContentPart,
  ResponsesToolParam,
  StreamingEvent,
  SystemMessageItemParamContentPart,
  Tool,
  UserMessageItemParamContentPart,
];

// Every member's `type`, the unknown member's included, is assignable to string. (An input item may
// leave `type` out, as a message or an item reference may: there it is `string | undefined`.)
export function typeStrings([
  annotation,
  assistantPart,
  outputParamPart,
  outputPart,
  item,
  itemParam,
  part,
  reasoningPart,
  toolParam,
  event,
  systemPart,
  tool,
  userPart,
]: OPEN_UNIONS): string[] {
  const optional: string | undefined = itemParam.type;
  return [
    annotation.type,
    assistantPart.type,
    outputParamPart.type,
    outputPart.type,
    item.type,
    optional ?? "message",
    part.type,
    reasoningPart.type,
    toolParam.type,
    event.type,
    systemPart.type,
    tool.type,
    userPart.type,
  ];
}

export function plainString(
  event: StreamingEvent,
  item: ItemField,
  unknown: UnknownItem,
): string[] {
  const eventType: string = event.type;
  const itemType: string = item.type;
  const unknownType: string = unknown.type;
  const raw: UnknownType = unknown.type;
  return [
    eventType,
    itemType,
    unknownType,
    raw,
    event.type.toUpperCase(),
    `${item.type}`,
  ];
}

// Narrowing on `type` in a switch gives each case its member alone, and the rest to default.
export function describeEvent(event: StreamingEvent): string {
  switch (event.type) {
    case "response.output_text.delta":
      // @ts-expect-error: a delta event has no `response`
      void event.response;
      return event.delta;
    case "response.completed":
      return event.response.id;
    case "openai:response.web_search_call.searching":
      return event.item_id;
    default: {
      const rest: string = event.type;
      return rest;
    }
  }
}

export function describeItem(item: ItemField): string {
  if (item.type === "function_call") return `${item.name}(${item.arguments})`;
  if (item.type === "openai:web_search_call") return item.action.type;
  switch (item.type) {
    case "message":
      return item.role;
    default:
      return item.type;
  }
}

// A type the spec does not know is compared as the plain string it is.
export function isVendorThing(item: ItemField): boolean {
  const type: string = item.type;
  return type === "zeta:thing";
}

export function contentText(part: MessageContentPart): string {
  return part.type === "output_text" ? part.text : part.type;
}
