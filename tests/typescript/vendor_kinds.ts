// Against the package built with the `acme` fixture fragment (tests/fixtures/spec-with-vendor), which
// declares one extension of each kind: each is a member of its union, typed once narrowed.
import type {
  ItemField,
  ItemParam,
  MessageContentPart,
  ResponseResource,
  ResponsesToolParam,
  StreamingEvent,
  Tool,
} from "openresponses-runtime";

export function query(item: ItemField): string | null {
  return item.type === "acme:web_search_call" ? item.query : null;
}

export function sentBack(item: ItemParam): string[] | null {
  return item.type === "acme:web_search_call" ? (item.results ?? []) : null;
}

export function clip(part: MessageContentPart): string | null {
  return part.type === "acme:audio_clip" ? part.audio_url : null;
}

export function maxResults(
  tool: Tool | ResponsesToolParam,
): number | undefined {
  return tool.type === "acme:search" ? tool.max_results : undefined;
}

export function pagesRead(event: StreamingEvent): number | null {
  return event.type === "acme:response.search.progress"
    ? event.pages_read
    : null;
}

export function cacheHit(response: ResponseResource): boolean | undefined {
  return response["acme:cache_hit"];
}
